# shellcheck shell=bash
#
# deploy/images/lib.sh: shared by deploy/images/build and tests/deploy/images/run.
# Defines functions and SBI_* names only; never changes the caller's shell options.
# shellcheck disable=SC2034 # the SBI_* names are for the scripts that source this
#
# Settings (environment, read by sbi_defaults):
#   SB_IMAGE_CACHE    where base root filesystems are kept       (default $SB_REPO/var/images)
#   SB_IMAGE_PREFIX   image name prefix                          (default localhost/switchboard)
#   SB_IMAGE_TAG      tag of the component images               (default dev)
#   SB_IMAGE_MIRROR   Debian mirror for mmdebstrap and apt in the images
#                     (default: the first bookworm URI in /etc/apt/sources.list*)
#   SB_IMAGE_SECURITY_MIRROR  the bookworm-security mirror (default: from the same files)
#   SB_PODMAN         the podman binary                          (default podman)

SBI_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SBI_DIR="$SBI_REPO/deploy/images"
SBI_SUITE=bookworm
SBI_COMPONENTS=(frontend broker worker sbctl emulator)

sbi_msg() { printf 'images: %s\n' "$*" >&2; }
sbi_die() { sbi_msg "error: $*"; return 1; }

sbi_defaults() {
    : "${SB_IMAGE_CACHE:=$SBI_REPO/var/images}"
    [[ $SB_IMAGE_CACHE == /* ]] || SB_IMAGE_CACHE="$PWD/$SB_IMAGE_CACHE"
    : "${SB_IMAGE_PREFIX:=localhost/switchboard}"
    : "${SB_IMAGE_TAG:=dev}"
    : "${SB_PODMAN:=podman}"
    SBI_BASE="$SB_IMAGE_PREFIX/debian-base:$SBI_SUITE"
    SBI_TOOLCHAIN="$SB_IMAGE_PREFIX/debian-build:$SBI_SUITE"
    SBI_BUILD="$SB_IMAGE_PREFIX/build:$SB_IMAGE_TAG"
    export SB_IMAGE_CACHE SB_IMAGE_PREFIX SB_IMAGE_TAG SB_PODMAN
}

# The image name of a component (frontend broker worker sbctl emulator).
sbi_image() {
    case $1 in
    sbctl) printf '%s/sbctl:%s' "$SB_IMAGE_PREFIX" "$SB_IMAGE_TAG" ;;
    *) printf '%s/sb-%s:%s' "$SB_IMAGE_PREFIX" "$1" "$SB_IMAGE_TAG" ;;
    esac
}

# The binary a component's image runs.
sbi_binary() {
    case $1 in
    sbctl) printf sbctl ;;
    *) printf 'sb-%s' "$1" ;;
    esac
}

# Prints the URI of the first apt source (one-line .list or deb822 .sources)
# that serves SUITE from Debian's main archive (SUITE bookworm) or its
# security archive (SUITE bookworm-security); nothing when there is none.
sbi_apt_uri() {
    local want=$1 f uri
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        # deb [options] URI SUITE COMPONENTS...
        uri="$(awk -v want="$want" '$1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == want) { print $i; exit }
            }' "$f")"
        [[ -n $uri ]] && { printf '%s' "${uri%/}"; return 0; }
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        # deb822: one stanza per paragraph; the first URI of a "deb" stanza listing SUITE.
        uri="$(awk -v want="$want" 'BEGIN { RS = "" } {
                types = uris = suites = ""
                n = split($0, lines, "\n")
                for (k = 1; k <= n; k++) {
                    line = lines[k]
                    if (line ~ /^Types:/) types = " " substr(line, 7) " "
                    else if (line ~ /^URIs:/) uris = substr(line, 6)
                    else if (line ~ /^Suites:/) suites = " " substr(line, 8) " "
                }
                gsub(/[ \t]+/, " ", types); gsub(/[ \t]+/, " ", suites)
                split(uris, u, " ")
                if (types ~ / deb / && suites ~ (" " want " ") && u[1] != "") { print u[1]; exit }
            }' "$f")"
        [[ -n $uri ]] && { printf '%s' "${uri%/}"; return 0; }
    done
    return 1
}

# Sets SBI_MIRROR and SBI_SECURITY_MIRROR (SB_IMAGE_MIRROR etc., else this
# machine's apt sources, else deb.debian.org).
sbi_mirrors() {
    SBI_MIRROR="${SB_IMAGE_MIRROR:-$(sbi_apt_uri "$SBI_SUITE")}"
    SBI_SECURITY_MIRROR="${SB_IMAGE_SECURITY_MIRROR:-$(sbi_apt_uri "$SBI_SUITE-security")}"
    : "${SBI_MIRROR:=http://deb.debian.org/debian}"
    : "${SBI_SECURITY_MIRROR:=http://deb.debian.org/debian-security}"
}

# Runs podman (SB_PODMAN) with the global flags this machine needs.
sbi_podman() {
    "$SB_PODMAN" "${SBI_PODMAN_GLOBAL[@]}" "$@"
}

# Finds out how containers can run here and sets
#   SBI_PODMAN_GLOBAL  global podman flags (e.g. --runtime runc)
#   SBI_RUN_FLAGS      flags every "podman run" needs (e.g. --ulimit ...)
#   SBI_RUN_ERROR      the last error when no combination runs a container
# Probes with IMAGE (default the base image): crun cannot start containers on
# a host whose cgroup v2 hierarchy is mounted beside v1 with a controller in
# it ("hybrid mode"), where runc can; and podman's default rlimits (nofile
# 1048576, nproc 4194304) cannot be set where the podman process lacks
# CAP_SYS_RESOURCE, so the limits are then taken from podman's own.
# Returns non-zero when no container can run (the reason in SBI_RUN_ERROR).
sbi_detect_podman() {
    local image=${1:-$SBI_BASE} out nofile nproc
    SBI_PODMAN_GLOBAL=() SBI_RUN_FLAGS=() SBI_RUN_ERROR=""
    local runtimes=("") limits=("")
    command -v runc >/dev/null 2>&1 && runtimes+=(runc)
    nofile="$(ulimit -Hn)"
    [[ $nofile == unlimited || $nofile -gt 1048576 ]] && nofile=1048576
    # (Seen here: podman's own RLIMIT_NPROC is kernel.pid_max; stay within both.)
    nproc="$(ulimit -Hu)"
    [[ $nproc == unlimited ]] && nproc=1048576
    local pidmax
    pidmax="$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)"
    ((nproc > pidmax)) && nproc=$pidmax
    limits+=("--ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc" "--ulimit nofile=4096:4096 --ulimit nproc=4096:4096")
    local r l flags=() first=""
    for r in "${runtimes[@]}"; do
        for l in "${limits[@]}"; do
            flags=()
            [[ -n $r ]] && flags+=(--runtime "$r")
            local lf=()
            read -ra lf <<<"$l"
            if out="$(timeout 120 "$SB_PODMAN" "${flags[@]}" run --rm --pull=never --network none "${lf[@]}" --entrypoint /bin/true "$image" 2>&1)"; then
                SBI_PODMAN_GLOBAL=("${flags[@]}")
                SBI_RUN_FLAGS=("${lf[@]}")
                return 0
            fi
            SBI_RUN_ERROR="$(printf '%s' "$out" | tail -n 1)"
            [[ -n $first ]] || first=$SBI_RUN_ERROR
        done
    done
    [[ $first == "$SBI_RUN_ERROR" ]] || SBI_RUN_ERROR="$first; with ${flags[*]} ${lf[*]}: $SBI_RUN_ERROR"
    if [[ $SBI_RUN_ERROR == *"hybrid mode"* ]] && ! command -v runc >/dev/null 2>&1; then
        SBI_RUN_ERROR+=" (install runc: crun cannot run on this cgroup setup, runc can)"
    fi
    return 1
}

# True when IMAGE exists in podman's storage.
sbi_image_exists() {
    "$SB_PODMAN" image exists "$1" 2>/dev/null
}
