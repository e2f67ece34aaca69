# Functions behind scripts/package (sourced; ROOT, DIST, SCRATCH, STAGE and CACHE are set there).

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'scripts/package: %s\n' "$*" >&2; exit 1; }

# The version the binary reports: a tag (v1.2.3 → 1.2.3) or a commit, with -dirty for a changed
# work tree. No tag yet: the commit's short hash.
release_version() {
    if [[ -n ${CAST2MQTT_VERSION:-} ]]; then
        printf '%s\n' "$CAST2MQTT_VERSION"
        return
    fi
    local described
    described=$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo unknown)
    printf '%s\n' "${described#v}"
}

# A Debian version that sorts the way builds were made. A tagged build is its tag
# (1.2.3, or 1.2.3+git5.gabcdef0 five commits later); without a tag it is
# 0.1.0+git<commits>.g<hash> (the commit count makes a later build sort higher); a dirty tree
# adds .dirty.
deb_version() {
    if [[ -n ${CAST2MQTT_DEB_VERSION:-} ]]; then
        printf '%s\n' "$CAST2MQTT_DEB_VERSION"
        return
    fi
    local v=${1:?} dirty=""
    if [[ $v == *-dirty ]]; then dirty=.dirty; v=${v%-dirty}; fi
    if [[ $v =~ ^[0-9a-f]{7,40}$ ]]; then
        # No tag: a commit hash (which may start with a digit).
        local count
        count=$(git -C "$ROOT" rev-list --count HEAD 2>/dev/null || echo 0)
        printf '0.1.0+git%s.g%s%s\n' "$count" "$v" "$dirty"
    elif [[ $v =~ ^([0-9][0-9A-Za-z.~]*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
        printf '%s+git%s.g%s%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "$dirty"
    elif [[ $v =~ ^[0-9][0-9A-Za-z.+~]*$ ]]; then
        printf '%s%s\n' "$v" "${dirty:++dirty}"
    else
        local count
        count=$(git -C "$ROOT" rev-list --count HEAD 2>/dev/null || echo 0)
        printf '0.1.0+git%s.g%s%s\n' "$count" "$v" "$dirty"
    fi
}

# Copies the files git knows (tracked, and new ones not ignored) into $STAGE, with
# Sources/Settings/BuildVersion.swift saying $1. rsync --checksum leaves unchanged
# files alone, so the release build stays incremental.
stage_tree() {
    local version=$1 tmp
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" RETURN
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard --deduplicate |
        tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$tmp"
    [[ -f $ROOT/Package.resolved ]] && cp -p "$ROOT/Package.resolved" "$tmp/"
    local escaped=${version//\\/\\\\}
    escaped=${escaped//\"/\\\"}
    cat > "$tmp/Sources/Settings/BuildVersion.swift" <<EOF
// Written by scripts/package: the version of this release build.
public enum BuildVersion {
    public static let string = "$escaped"
}
EOF
    mkdir -p "$STAGE"
    rsync -a --checksum --delete "$tmp/" "$STAGE/"
}

package_binary() {
    if [[ ${CAST2MQTT_REUSE_BINARY:-0} == 1 && -x $DIST/cast2mqtt && -f $DIST/VERSION ]]; then
        say "reusing $DIST/cast2mqtt ($(cat "$DIST/VERSION"))"
        return
    fi
    command -v rsync >/dev/null || die "rsync is needed (apt-get install rsync)"
    local version
    version=$(release_version)
    say "release build of cast2mqtt $version (static Swift runtime) in $SCRATCH"
    stage_tree "$version"
    local start=$SECONDS
    nice -n "${CAST2MQTT_PACKAGE_NICE:-19}" swift build -c release --package-path "$STAGE" --scratch-path "$SCRATCH" \
        --static-swift-stdlib -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro --product cast2mqtt
    say "built in $((SECONDS - start)) s"
    mkdir -p "$DIST"
    local bin
    bin=$(swift build -c release --package-path "$STAGE" --scratch-path "$SCRATCH" --show-bin-path)/cast2mqtt
    strip --strip-all -o "$DIST/cast2mqtt.tmp" "$bin"
    mv "$DIST/cast2mqtt.tmp" "$DIST/cast2mqtt"
    printf '%s\n' "$version" > "$DIST/VERSION"
    deb_version "$version" > "$DIST/DEB_VERSION"
    local reported
    reported=$("$DIST/cast2mqtt" --version)
    [[ $reported == "$version" ]] || die "the binary says version '$reported', expected '$version'"
    say "dist/cast2mqtt: $(stat -c %s "$DIST/cast2mqtt") bytes, version $reported"
    "$ROOT/Tests/packaging/check_needed.sh" "$DIST/cast2mqtt"
}

# The .deb: debhelper over deploy/debian/ and the release binary, in dist/deb-build/. Its
# architecture is the build host's (`dpkg --print-architecture`, the binary's own): control says
# `Architecture: any`.
package_deb() {
    command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
        die "dpkg-dev and debhelper are needed (apt-get install debhelper)"
    package_binary
    local version debver build arch
    version=$(cat "$DIST/VERSION")
    debver=${CAST2MQTT_DEB_VERSION:-$(cat "$DIST/DEB_VERSION" 2>/dev/null || deb_version "$version")}
    arch=$(dpkg --print-architecture)
    build=$DIST/deb-build/cast2mqtt-$debver
    say "cast2mqtt_${debver}_${arch}.deb (binary $version)"
    rm -rf "$DIST/deb-build"
    mkdir -p "$build"
    cp -a "$ROOT/deploy/debian" "$build/debian"
    cp -p "$DIST/cast2mqtt" "$build/cast2mqtt"
    # The docs listed in debian/docs, from the tree.
    local doc
    while read -r doc; do
        [[ -n $doc ]] || continue
        mkdir -p "$build/$(dirname "$doc")"
        cp -p "$ROOT/$doc" "$build/$doc"
    done < "$ROOT/deploy/debian/docs"
    # The unit is deploy/cast2mqtt.service with the packaged binary's path.
    {
        echo "# systemd unit for cast2mqtt, installed by its Debian package (from deploy/cast2mqtt.service)."
        sed '1,/^# The Debian package/d; s|/usr/local/bin/cast2mqtt|/usr/bin/cast2mqtt|g' "$ROOT/deploy/cast2mqtt.service"
    } > "$build/debian/cast2mqtt.service"
    local date
    date=$(git -C "$ROOT" log -1 --format=%aD 2>/dev/null || date -R)
    printf 'cast2mqtt (%s) unstable; urgency=medium\n\n  * Built from cast2mqtt %s.\n\n -- %s  %s\n' \
        "$debver" "$version" "cast2mqtt maintainers <cast2mqtt@example.org>" "$date" > "$build/debian/changelog"
    if ! (cd "$build" && nice -n "${CAST2MQTT_PACKAGE_NICE:-19}" dpkg-buildpackage -b -us -uc --no-check-builddeps \
            >"$DIST/deb-build/build.log" 2>&1); then
        tail -40 "$DIST/deb-build/build.log" >&2
        die "dpkg-buildpackage failed (dist/deb-build/build.log)"
    fi
    local deb=cast2mqtt_${debver}_${arch}.deb
    mv "$DIST/deb-build/$deb" "$DIST/$deb"
    say "dist/$deb: $(stat -c %s "$DIST/$deb") bytes"
    printf '%s\n' "$deb" > "$DIST/DEB"
    dpkg-deb -f "$DIST/$deb" Architecture Depends Recommends >&2
    if command -v lintian >/dev/null; then
        say "lintian $deb"
        lintian --display-info --pedantic --fail-on error,warning "$DIST/$deb" >&2 ||
            die "lintian: $deb has errors or warnings"
    fi
}
# This machine's Debian sources (a deb822 .sources file or a one-line sources.list), given to
# mmdebstrap as they are, so that a chroot or image uses the same mirror and suites as the host.
# CAST2MQTT_DEBIAN_SOURCES names another file.
debian_sources() {
    if [[ -n ${CAST2MQTT_DEBIAN_SOURCES:-} ]]; then
        printf '%s\n' "$CAST2MQTT_DEBIAN_SOURCES"
        return
    fi
    local f
    for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        if [[ -s $f ]] && grep -Eq '^(URIs:|deb )' "$f"; then
            printf '%s\n' "$f"
            return
        fi
    done
    die "no Debian sources found in /etc/apt (set CAST2MQTT_DEBIAN_SOURCES)"
}

# The Debian suite of the host (bookworm here): the chroots and images match the glibc the
# binary was built against.
debian_suite() {
    # shellcheck disable=SC1091
    (. /etc/os-release && printf '%s\n' "${VERSION_CODENAME:?}")
}

# base_rootfs NAME [--slim] PACKAGES...: a minbase root filesystem tarball with PACKAGES, made
# with mmdebstrap once and cached in $CACHE/rootfs/ (keyed by the suite, the sources and the
# package list; remade after CAST2MQTT_ROOTFS_MAX_AGE_DAYS, default 14). Prints the tarball's
# path. Without --slim apt's lists are kept (a test installs dependencies from them); --slim
# (for an image) drops them and keeps no documentation, manual pages or translations, as
# Debian's slim images do.
base_rootfs() {
    command -v mmdebstrap >/dev/null || die "mmdebstrap is needed (apt-get install mmdebstrap)"
    local name=$1 slim=0
    shift
    if [[ ${1:-} == --slim ]]; then slim=1; shift; fi
    local -a opts=(--skip=cleanup/apt/lists)
    if ((slim)); then
        opts=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
              --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/info/*'
              --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
              # merged /usr made by mmdebstrap itself: the usrmerge package would bring perl (50 MB).
              --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
    fi
    local suite sources key tarball
    suite=$(debian_suite)
    sources=$(debian_sources)
    key=$({ echo "$suite"; if ((slim)); then echo slim merged-usr-hook; fi; cat "$sources"; printf '%s\n' "$@"; } | sha256sum | cut -c1-12)
    tarball=$CACHE/rootfs/$name-$suite-$key.tar
    mkdir -p "$CACHE/rootfs"
    if [[ -f $tarball ]] &&
        [[ -z $(find "$tarball" -mtime +"${CAST2MQTT_ROOTFS_MAX_AGE_DAYS:-14}") ]]; then
        printf '%s\n' "$tarball"
        return
    fi
    say "mmdebstrap: $name ($suite, minbase + $*) into $tarball"
    local includes
    includes=$(IFS=,; printf '%s' "$*")
    # Apt's lists are kept (a test installs the package's dependencies from them); the
    # downloaded .debs are not.
    nice -n "${CAST2MQTT_PACKAGE_NICE:-19}" mmdebstrap --variant=minbase --mode=root --format=tar "${opts[@]}" \
        ${includes:+--include="$includes"} "$suite" "$tarball.tmp" "$sources" >&2 ||
        { rm -f "$tarball.tmp"; die "mmdebstrap failed"; }
    mv "$tarball.tmp" "$tarball"
    printf '%s\n' "$tarball"
}

# What the image needs at run time, on top of Debian's minbase (see deploy/container/Containerfile).
IMAGE_PACKAGES=(libavahi-client3 libmosquitto1 dbus avahi-daemon tini ca-certificates)
PODMAN_LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1000:1000)

# podman with runc when it is installed (CAST2MQTT_PODMAN_RUNTIME chooses another): crun refuses
# these machines' hybrid cgroup hierarchy.
podman_() {
    local runtime=${CAST2MQTT_PODMAN_RUNTIME:-$(command -v runc || true)}
    nice -n "${CAST2MQTT_PACKAGE_NICE:-19}" podman ${runtime:+--runtime "$runtime"} "$@"
}

# The local base image: a slim bookworm made with mmdebstrap and imported into podman (once per
# rootfs tarball), CAST2MQTT_BASE_IMAGE when it is set. Prints its name.
image_base() {
    if [[ -n ${CAST2MQTT_BASE_IMAGE:-} ]]; then
        printf '%s\n' "$CAST2MQTT_BASE_IMAGE"
        return
    fi
    local tarball name
    tarball=$(base_rootfs image-base --slim "${IMAGE_PACKAGES[@]}")
    name=localhost/cast2mqtt-base:$(basename "$tarball" .tar | sed 's/^image-base-//')
    if ! podman_ image exists "$name"; then
        say "podman import $tarball as $name"
        podman_ import --change 'CMD ["/bin/bash"]' "$tarball" "$name" >/dev/null
    fi
    printf '%s\n' "$name"
}

# BASE_ARGS: the --build-arg that names an image's base ($1 the argument, $2 the base given for
# it, if any): that base; none with CAST2MQTT_REGISTRY_BASES=1 (the Containerfile's or
# Dockerfile's own default, from a registry, as a release builds); otherwise the local
# mmdebstrap base. BASE_NAME says which, for the log.
base_args() {
    local arg=$1 given=${2:-}
    if [[ -z $given && ${CAST2MQTT_REGISTRY_BASES:-0} == 1 ]]; then
        BASE_ARGS=()
        BASE_NAME="the default base of the file"
        return
    fi
    [[ -n $given ]] || given=$(image_base)
    BASE_ARGS=(--build-arg "$arg=$given")
    BASE_NAME=$given
}

# The container image localhost/cast2mqtt:<version> (and :latest), built with podman from
# deploy/container/ and the release binary. Its name goes to dist/IMAGE.
package_image() {
    command -v podman >/dev/null || die "podman is needed (apt-get install podman)"
    package_binary
    local version tag ctx
    version=$(cat "$DIST/VERSION")
    base_args BASE "${CAST2MQTT_BASE_IMAGE:-}"
    tag=$(printf '%s' "$version" | tr -c 'A-Za-z0-9_.-' '_')
    ctx=$DIST/image-build
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp -p "$DIST/cast2mqtt" "$ROOT/deploy/container/Containerfile" "$ROOT/deploy/container/entrypoint.sh" \
        "$ROOT/deploy/container/healthcheck.sh" "$ctx/"
    say "podman build localhost/cast2mqtt:$tag FROM $BASE_NAME"
    # --format docker: the OCI format has no HEALTHCHECK.
    podman_ build --format docker "${PODMAN_LIMITS[@]}" "${BASE_ARGS[@]}" \
        --build-arg VERSION="$version" -t "localhost/cast2mqtt:$tag" -t localhost/cast2mqtt:latest \
        -f "$ctx/Containerfile" "$ctx" >&2
    rm -rf "$ctx"
    printf 'localhost/cast2mqtt:%s\n' "$tag" > "$DIST/IMAGE"
    local size
    size=$(podman_ image inspect --format '{{.Size}}' "localhost/cast2mqtt:$tag")
    say "localhost/cast2mqtt:$tag: $size bytes ($((size / 1048576)) MiB)"
}

# Home Assistant's name of this host's architecture (the add-on's `arch` and the {arch} of its
# `image`), from Debian's (`dpkg --print-architecture`).
addon_arch() {
    local arch
    arch=$(dpkg --print-architecture)
    case $arch in
        amd64) echo amd64 ;;
        arm64) echo aarch64 ;;
        *) die "no Home Assistant architecture for Debian's $arch" ;;
    esac
}

ADDON_DIR=$ROOT/deploy/home-assistant-addon/cast2mqtt

# A top-level scalar of the add-on's config.yaml ($1: the key), quotes removed.
addon_config() {
    sed -n "s/^$1:[[:space:]]*//p" "$ADDON_DIR/config.yaml" | sed 's/[[:space:]]*#.*$//; s/^"\(.*\)"$/\1/; s/^'"'"'\(.*\)'"'"'$/\1/'
}

# The Home Assistant add-on's image, built with podman from deploy/home-assistant-addon/cast2mqtt/
# for this host's architecture: BUILD_FROM the same local base as the container image, or
# CAST2MQTT_ADDON_BASE_IMAGE, or with CAST2MQTT_REGISTRY_BASES=1 the Dockerfile's own (Home
# Assistant's Debian base, as a release builds). The context is the add-on folder, the release
# binary and deploy/container's entrypoint and health check. Tagged
# localhost/cast2mqtt-addon:<version> (and :latest), its name in dist/ADDON_IMAGE, and as the
# Supervisor pulls it: config.yaml's `image` with {arch} replaced, at the tag <version>, that
# name in dist/ADDON_RELEASE_IMAGE (what a release pushes).
package_addon() {
    command -v podman >/dev/null || die "podman is needed (apt-get install podman)"
    package_binary
    local version tag ctx arch image
    version=$(cat "$DIST/VERSION")
    arch=$(addon_arch)
    image=$(addon_config image)
    [[ $image == *'{arch}'* ]] || die "the add-on's config.yaml has no image with {arch}"
    image=${image//\{arch\}/$arch}
    base_args BUILD_FROM "${CAST2MQTT_ADDON_BASE_IMAGE:-}"
    tag=$(printf '%s' "$version" | tr -c 'A-Za-z0-9_.-' '_')
    ctx=$DIST/addon-build
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp -p "$ADDON_DIR"/* "$ctx/" 2>/dev/null || true
    cp -p "$DIST/cast2mqtt" "$ROOT/deploy/container/entrypoint.sh" "$ROOT/deploy/container/healthcheck.sh" "$ctx/"
    say "podman build localhost/cast2mqtt-addon:$tag and $image:$tag for $arch FROM $BASE_NAME"
    podman_ build --format docker "${PODMAN_LIMITS[@]}" "${BASE_ARGS[@]}" \
        --build-arg BUILD_VERSION="$version" --build-arg BUILD_ARCH="$arch" \
        -t "localhost/cast2mqtt-addon:$tag" -t localhost/cast2mqtt-addon:latest -t "$image:$tag" \
        -f "$ctx/Dockerfile" "$ctx" >&2
    rm -rf "$ctx"
    printf 'localhost/cast2mqtt-addon:%s\n' "$tag" > "$DIST/ADDON_IMAGE"
    printf '%s:%s\n' "$image" "$tag" > "$DIST/ADDON_RELEASE_IMAGE"
    local size
    size=$(podman_ image inspect --format '{{.Size}}' "localhost/cast2mqtt-addon:$tag")
    say "localhost/cast2mqtt-addon:$tag ($image:$tag): $size bytes ($((size / 1048576)) MiB)"
}

# A release's version (CAST2MQTT_VERSION, from its tag) must be the add-on's: the Supervisor
# pulls the image at the tag config.yaml's `version` gives.
package_release_check() {
    local version addon
    version=$(release_version)
    addon=$(addon_config version)
    [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "'$version' is not a release version (X.Y.Z)"
    [[ $version == "$addon" ]] ||
        die "the release is $version but the add-on's config.yaml says version \"$addon\": change one of them"
    say "release $version: the add-on's config.yaml says the same"
}

# What `binary` and `deb` need from Debian (a release installs it in its Swift container):
# the C libraries' headers, pkg-config, rsync, debhelper and lintian.
PACKAGE_BUILD_DEPENDS=(pkg-config libmosquitto-dev libavahi-client-dev rsync debhelper lintian)
package_deps() {
    local -a missing=()
    local p
    for p in "${PACKAGE_BUILD_DEPENDS[@]}"; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    say "apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
