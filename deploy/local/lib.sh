# shellcheck shell=bash
#
# deploy/local/lib.sh: install, build and run a whole Switchboard stack on one
# machine (PostgreSQL, upstream emulator, broker, workers, frontends).
# Sourced by deploy/local/up, deploy/local/down and tests/run; it only defines
# functions and SB_REPO, and never changes the caller's shell options.
#
# Everything is parameterised by environment variables, read when a function
# runs (set them before calling), so a test can run a second, isolated stack
# next to the developer's:
#
#   SB_VAR            state dir: pg/, log/, run/, env, dev-key, admin-key   (default $SB_REPO/var)
#   SB_PORT           first frontend port                        (default 8080)
#   SB_FRONTENDS      number of frontends, on SB_PORT, SB_PORT+1, ... (default 1)
#   SB_FRONTEND_PORTS explicit frontend ports, e.g. "8080 9090" (overrides the two above)
#   SB_WORKERS        number of workers                          (default 2)
#   SB_WORKER_CONCURRENCY  --concurrency of each worker          (default 64)
#   SB_EMU_PORT       upstream emulator port                     (default 18080)
#   SB_ADMIN_PORT     first frontend's admin listener: /metrics, health, admin API, console
#                     (default SB_PORT + 1000; a free port when that is taken)
#   SB_BROKERS        number of brokers, active-active; frontends and workers connect to all (default 1)
#   SB_BROKER_FRONTEND_PORT, SB_BROKER_WORKER_PORT  the first broker's ports (default: free ports)
#   SB_BROKER_TRANSPORT  tcp (default) or ipc: the broker's endpoints as Unix sockets in $SB_VAR/run
#   SB_SANITIZE       ON: build with -DSB_SANITIZE=ON into build-asan (default OFF)
#   SB_BUILD_DIR      build dir (default $SB_REPO/build, or $SB_REPO/build-asan when SB_SANITIZE=ON)
#   SB_BUILD_TARGETS  cmake targets to build (default: all)
#   SB_JOBS           parallel build jobs                        (default 2)
#   SB_READY_TIMEOUT  seconds to wait for the frontends          (default 30)
#   SB_FRONTEND_ARGS, SB_WORKER_ARGS, SB_BROKER_ARGS, SB_EMU_ARGS  extra arguments (word-split)
#
# After sb_pg_start and sb_start_stack the caller's shell has these exported
# (and $SB_VAR/env, mode 600, exports the same for other shells):
#   SB_PG_DSN SB_PG_PORT SB_URL SB_FRONTEND_URLS SB_EMU_URL
#   SB_BROKER_FRONTEND_ENDPOINT SB_BROKER_WORKER_ENDPOINT (comma-separated: every broker's)
#   SB_EMU_UPSTREAM_KEY SB_DEV_KEY_FILE SB_BROKER_ADMIN_URL (the first broker's) SB_BROKER_ADMIN_URLS
#
# Functions (each returns non-zero with a message on stderr on failure):
#   sb_install_deps   apt-get install what is missing
#   sb_build          cmake configure + build
#   sb_pg_start       init (first time) and start PostgreSQL under $SB_VAR/pg
#   sb_pg_stop        stop it (pg_ctl -m fast)
#   sb_seed           migrate; account dev, group default (*), models emu-chat (and one per upstream
#                     kind; emu-embed: the frontends' embedding model; gpt-image-1 and
#                     emu-gemini-image: image routes), $SB_VAR/dev-key
#   sb_start_stack    start emulator, broker, workers, frontends; wait until ready
#   sb_stop_procs     stop the processes started by sb_start_stack (TERM, 10 s, KILL)
#   sb_stop_stack     sb_stop_procs + sb_pg_stop
#   sb_start_emulator, sb_start_broker [K], sb_start_worker K, sb_start_frontend K, sb_wait_ready
#                     the pieces of sb_start_stack, for tests that restart one process
#   sb_stop_proc NAME [SIGNAL]   stop one process (names: emulator broker brokerK workerK frontendK)
#   sb_status         one line per process and for PostgreSQL
#   sb_sanitizer_report  print sanitizer reports found in the logs; non-zero if any
#
# Logs: $SB_VAR/log/NAME.log (NAME as above, plus postgres, build, seed).
# Pid files: $SB_VAR/run/NAME.pid.

SB_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# --- helpers -----------------------------------------------------------------

sb_msg() { printf 'switchboard: %s\n' "$*" >&2; }
sb_die() { sb_msg "error: $*"; return 1; }

# Fills in defaults for every unset setting; called by each public function.
sb_defaults() {
    : "${SB_VAR:=$SB_REPO/var}"
    [[ $SB_VAR == /* ]] || SB_VAR="$PWD/$SB_VAR"
    : "${SB_PORT:=8080}"
    : "${SB_EMU_PORT:=18080}"
    : "${SB_FRONTENDS:=1}"
    : "${SB_WORKERS:=2}"
    : "${SB_WORKER_CONCURRENCY:=64}"
    : "${SB_READY_TIMEOUT:=30}"
    : "${SB_JOBS:=2}"
    case "${SB_SANITIZE:-OFF}" in
    ON | on | 1 | yes | true | TRUE) SB_SANITIZE=ON ;;
    *) SB_SANITIZE=OFF ;;
    esac
    if [[ -z ${SB_BUILD_DIR:-} ]]; then
        if [[ $SB_SANITIZE == ON ]]; then SB_BUILD_DIR="$SB_REPO/build-asan"; else SB_BUILD_DIR="$SB_REPO/build"; fi
    fi
    [[ $SB_BUILD_DIR == /* ]] || SB_BUILD_DIR="$PWD/$SB_BUILD_DIR"
    export SB_VAR SB_PORT SB_EMU_PORT SB_FRONTENDS SB_WORKERS SB_SANITIZE SB_BUILD_DIR
    export SB_DEV_KEY_FILE="$SB_VAR/dev-key"
    local n
    for n in SB_PORT SB_EMU_PORT SB_FRONTENDS SB_WORKERS SB_WORKER_CONCURRENCY SB_READY_TIMEOUT SB_JOBS; do
        [[ ${!n} =~ ^[0-9]+$ ]] || { sb_die "$n must be a number, got '${!n}'"; return 1; }
    done
}

# Runs a command as root (sudo when we are not root).
sb_as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# 48 hex digits from the kernel CSPRNG (no pipeline that could take SIGPIPE).
sb_random_secret() {
    local s
    s="$(od -An -tx1 -N24 /dev/urandom)"
    s="${s//[$' \n']/}"
    printf '%s' "$s"
}

# Creates FILE (mode 600) holding a new random secret unless it exists.
sb_secret_file() {
    local f=$1
    [[ -s $f ]] && return 0
    (umask 077 && sb_random_secret >"$f.tmp" && mv "$f.tmp" "$f")
}

# Writes a 256-bit key as 64 hex characters to FILE unless it exists (mode 600):
# the key frontends seal encrypted reasoning with (all instances share it).
sb_key_file() {
    local f=$1
    [[ -s $f ]] && return 0
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$f.tmp" && mv "$f.tmp" "$f")
}

# True when something accepts TCP connections on 127.0.0.1:PORT.
sb_port_busy() {
    (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Sets variable VAR to a free port in 20000-31999 (below Linux's ephemeral
# range), never one handed out earlier in this shell: nothing is bound to them
# until the processes start. (Not a $(...) function: the record of ports
# handed out must survive in this shell.)
_SB_PORTS_GIVEN=" "
sb_pick_port() {
    local -n _sb_out=$1
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
        [[ $_SB_PORTS_GIVEN == *" $p "* ]] && continue
        sb_port_busy "$p" && continue
        _SB_PORTS_GIVEN+="$p "
        _sb_out=$p
        return 0
    done
    sb_die "no free TCP port found on 127.0.0.1"
}

# True when PID is a live (not zombie) process.
sb_pid_alive() {
    local pid=$1 stat
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [[ ${stat%% *} != Z ]]
}

# Prints the pid recorded in $SB_VAR/run/NAME.pid when that process is alive
# and is still one of ours (an sb-* binary, not a recycled pid).
sb_proc_pid() {
    local pidf="$SB_VAR/run/$1.pid" pid cmd
    [[ -s $pidf ]] || return 1
    pid="$(<"$pidf")"
    sb_pid_alive "$pid" || return 1
    cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    cmd="${cmd%% *}"
    [[ ${cmd##*/} == sb-* ]] || return 1
    printf '%s' "$pid"
}

# Names of processes with a pid file, in start order.
sb_proc_names() {
    local f n names=()
    for f in "$SB_VAR"/run/*.pid; do
        [[ -e $f ]] || continue
        n="${f##*/}"
        n="${n%.pid}"
        [[ $n == up ]] && continue
        names+=("$n")
    done
    ((${#names[@]})) && printf '%s\n' "${names[@]}"
    return 0
}

sb_log_tail() {
    local log="$SB_VAR/log/$1.log"
    [[ -f $log ]] || return 0
    printf -- '--- last lines of %s ---\n' "$log" >&2
    tail -n "${2:-25}" "$log" >&2
    printf -- '---\n' >&2
}

# --- dependencies and build ----------------------------------------------------

SB_DEB_PACKAGES=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libmsgpack-dev libevent-dev
    libjansson-dev libpq-dev libcurl4-openssl-dev libssl-dev libxml2-dev postgresql postgresql-contrib wrk nginx-light
    json-schema-test-suite curl ca-certificates clang-format-14 python3
    bubblewrap python3-numpy python3-pandas python3-matplotlib libpoppler-glib-dev chromium iproute2
    mmdebstrap podman runc python3-munkres)

sb_node_ok() {
    local v
    command -v node >/dev/null 2>&1 || return 1
    v="$(node --version 2>/dev/null)" || return 1
    v="${v#v}"
    [[ ${v%%.*} =~ ^[0-9]+$ ]] && ((${v%%.*} >= 20))
}

sb_install_deps() {
    local want=("${SB_DEB_PACKAGES[@]}") missing=() p
    sb_node_ok || want+=(nodejs npm)
    for p in "${want[@]}"; do
        [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" == installed ]] || missing+=("$p")
    done
    if ((${#missing[@]} == 0)); then
        sb_msg "dependencies: all present"
        return 0
    fi
    sb_msg "installing: ${missing[*]}"
    if [[ $EUID -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
        sb_die "not root and no sudo: install these first: ${missing[*]}"
        return 1
    fi
    sb_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || return 1
    sb_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
        return 1
    sb_node_ok || sb_msg "warning: node $(node --version 2>/dev/null || echo missing) is older than 20; the Node tests need 20+"
}

sb_build() {
    sb_defaults || return 1
    mkdir -p "$SB_VAR/log"
    local log="$SB_VAR/log/build.log" targets=()
    if [[ -n ${SB_BUILD_TARGETS:-} ]]; then
        read -ra targets <<<"$SB_BUILD_TARGETS"
        targets=(--target "${targets[@]}")
    fi
    sb_msg "building in $SB_BUILD_DIR (SB_SANITIZE=$SB_SANITIZE; log: $log)"
    if ! {
        cmake -S "$SB_REPO" -B "$SB_BUILD_DIR" -DSB_SANITIZE="$SB_SANITIZE" &&
            cmake --build "$SB_BUILD_DIR" -j"$SB_JOBS" "${targets[@]}"
    } >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        sb_die "build failed (full log: $log)"
        return 1
    fi
}

# --- PostgreSQL ----------------------------------------------------------------

# The OS user PostgreSQL runs as: ourselves, or (as root, since postgres
# refuses to run as root) the Debian 'postgres' user, else a system user 'sbpg'.
sb_pg_user() {
    if [[ $EUID -ne 0 ]]; then
        id -un
    elif id -u postgres >/dev/null 2>&1; then
        printf postgres
    else
        id -u sbpg >/dev/null 2>&1 ||
            useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sbpg ||
            return 1
        printf sbpg
    fi
}

# Runs a command as the PostgreSQL user, from / (its home may be unreadable).
sb_as_pg() {
    local u
    u="$(sb_pg_user)" || return 1
    if [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u "$u" -- "$@")
    else
        (cd / && "$@")
    fi
}

# The bin dir of the server version that owns the data dir, else the newest.
sb_pg_bindir() {
    local data="$SB_VAR/pg/data" d
    if [[ -s $data/PG_VERSION && -x /usr/lib/postgresql/$(<"$data/PG_VERSION")/bin/postgres ]]; then
        printf '%s' "/usr/lib/postgresql/$(<"$data/PG_VERSION")/bin"
        return 0
    fi
    d="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -type d -name bin 2>/dev/null | sort -V | tail -n 1)"
    [[ -n $d && -x $d/initdb ]] || { sb_die "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin (sb_install_deps)"; return 1; }
    printf '%s' "$d"
}

# Makes DIR and each of its parents traversable (o+x) for USER, checking from
# / down so only the directories that actually block it are changed.
sb_make_traversable() {
    local dir=$1 user=$2 dirs=() i
    while [[ -n $dir && $dir != / ]]; do
        dirs+=("$dir")
        dir="$(dirname "$dir")"
    done
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        if ! runuser -u "$user" -- test -x "${dirs[$i]}" 2>/dev/null; then
            sb_msg "making ${dirs[$i]} traversable (o+x) for the $user user"
            chmod o+x "${dirs[$i]}" || return 1
        fi
    done
}

sb_pg_dsn() {
    printf 'host=127.0.0.1 port=%s user=switchboard password=%s dbname=switchboard' \
        "$(<"$SB_VAR/pg/port")" "$(<"$SB_VAR/pg/password")"
}

sb_pg_running() {
    local bin
    bin="$(sb_pg_bindir)" || return 1
    [[ -s $SB_VAR/pg/data/PG_VERSION ]] && sb_as_pg "$bin/pg_ctl" status -D "$SB_VAR/pg/data" >/dev/null 2>&1
}

sb_pg_start() {
    sb_defaults || return 1
    local pg="$SB_VAR/pg" data="$SB_VAR/pg/data" run="$SB_VAR/pg/run" log="$SB_VAR/log/postgres.log"
    local user bin port
    user="$(sb_pg_user)" || { sb_die "cannot find or create a user to run PostgreSQL"; return 1; }
    bin="$(sb_pg_bindir)" || return 1
    mkdir -p "$pg" "$SB_VAR/log" "$SB_VAR/run" || return 1
    chmod o+x "$SB_VAR" "$pg" "$SB_VAR/log" || return 1
    if [[ $EUID -eq 0 ]]; then
        sb_make_traversable "$SB_VAR" "$user" || return 1
        install -d -m 700 -o "$user" -g "$(id -gn "$user")" "$data" "$run" || return 1
        [[ -e $log ]] || : >"$log"
        chown "$user" "$log" || return 1
        # A data dir made by another user (an earlier non-root run) must change hands.
        [[ "$(stat -c %U "$data")" == "$user" ]] || chown -R "$user" "$data" || return 1
    else
        mkdir -p "$data" "$run" && chmod 700 "$data" "$run" || return 1
    fi
    sb_secret_file "$pg/password" || return 1

    if sb_pg_running; then
        port="$(<"$pg/port")"
        sb_msg "PostgreSQL already running on 127.0.0.1:$port"
    else
        if [[ ! -s $data/PG_VERSION ]]; then
            sb_msg "initialising PostgreSQL cluster in $data (as $user)"
            sb_as_pg "$bin/initdb" -D "$data" --encoding=UTF8 --locale=C \
                --auth-local=trust --auth-host=scram-sha-256 >>"$log" 2>&1 ||
                { sb_log_tail postgres; sb_die "initdb failed"; return 1; }
            # Local (unix socket) trust is safe: the socket dir is mode 700.
            printf "\n# deploy/local: settings rewritten at every start\ninclude_if_exists = 'switchboard.conf'\n" |
                sb_as_pg tee -a "$data/postgresql.conf" >/dev/null || return 1
        fi
        if [[ -s $pg/port ]] && ! sb_port_busy "$(<"$pg/port")"; then
            port="$(<"$pg/port")"
        else
            sb_pick_port port || return 1
        fi
        printf '%s\n' "$port" >"$pg/port"
        # Single quotes in a path are doubled for the config file syntax.
        printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nmax_connections = 200\n" \
            "$port" "${run//\'/\'\'}" | sb_as_pg tee "$data/switchboard.conf" >/dev/null || return 1
        sb_msg "starting PostgreSQL on 127.0.0.1:$port (log: $log)"
        sb_as_pg "$bin/pg_ctl" start -D "$data" -l "$log" -w -t 60 >/dev/null ||
            { sb_log_tail postgres; sb_die "PostgreSQL did not start"; return 1; }
    fi

    local i
    for ((i = 0; i < 60; i++)); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
        sleep 0.5
    done
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" || { sb_log_tail postgres; sb_die "PostgreSQL not accepting connections"; return 1; }

    # Role and database, idempotently; the password travels on stdin, not argv.
    {
        printf "\\set pw '%s'\n" "$(<"$pg/password")"
        cat <<'SQL'
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'switchboard') AS need_role \gset
\if :need_role
CREATE ROLE switchboard LOGIN;
\endif
ALTER ROLE switchboard PASSWORD :'pw';
SELECT NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'switchboard') AS need_db \gset
\if :need_db
CREATE DATABASE switchboard OWNER switchboard;
\endif
SQL
    } | sb_as_pg "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$run" -p "$port" -d postgres >/dev/null ||
        { sb_die "could not create the switchboard role/database"; return 1; }

    SB_PG_PORT=$port
    SB_PG_DSN="$(sb_pg_dsn)"
    export SB_PG_PORT SB_PG_DSN
    sb_write_env
}

sb_pg_stop() {
    sb_defaults || return 1
    local bin
    [[ -s $SB_VAR/pg/data/PG_VERSION ]] || return 0
    bin="$(sb_pg_bindir)" || return 1
    if sb_pg_running; then
        sb_msg "stopping PostgreSQL"
        sb_as_pg "$bin/pg_ctl" stop -D "$SB_VAR/pg/data" -m fast -w -t 60 >/dev/null || return 1
    fi
}

# $SB_VAR/env: everything a shell or test needs to talk to this stack.
sb_write_env() {
    local f="$SB_VAR/env" n
    {
        printf '# Written by deploy/local/lib.sh; "source %s" to talk to this stack.\n' "$f"
        for n in SB_VAR SB_BUILD_DIR SB_SANITIZE SB_PG_PORT SB_PG_DSN SB_PORT SB_URL SB_FRONTEND_URLS SB_EMU_PORT \
            SB_EMU_URL SB_BROKER_FRONTEND_ENDPOINT SB_BROKER_WORKER_ENDPOINT SB_EMU_UPSTREAM_KEY SB_DEV_KEY_FILE \
            SB_FRONTEND_ADMIN_URLS SB_BROKER_ADMIN_URL SB_BROKER_ADMIN_URLS SB_WORKER_ADMIN_URLS SB_BROKERS; do
            [[ -n ${!n:-} ]] && printf 'export %s=%q\n' "$n" "${!n}"
        done
        # shellcheck disable=SC2016
        printf 'export PATH=%q:"$PATH"\n' "$SB_BUILD_DIR/bin"
    } | (umask 077 && cat >"$f.tmp") && mv "$f.tmp" "$f"
}

# --- seed ----------------------------------------------------------------------

sb_sbctl() {
    "$SB_BUILD_DIR/bin/sbctl" "$@"
}

# One emulator-backed model per upstream kind: ID PROVIDER BASE_URL. Base URLs
# follow each provider's convention: OpenAI kinds end in /v1, Anthropic is the
# bare origin (the adapter adds /v1/messages), Gemini ends in /v1beta.
# sb_seed_model ID PROVIDER BASE_URL [UPSTREAM_MODEL (default emu-model)]
sb_seed_model() {
    local up=${4:-emu-model}
    sb_sbctl model add "$1" --if-not-exists --provider "$2" --base-url "$3" --upstream-model "$up" \
        --credential-ref SB_EMU_UPSTREAM_KEY &&
        sb_sbctl model set "$1" --provider "$2" --base-url "$3" --upstream-model "$up" \
            --credential-ref SB_EMU_UPSTREAM_KEY --max-output-tokens 65536 &&
        sb_sbctl model enable "$1"
}

sb_seed() {
    sb_defaults || return 1
    [[ -x $SB_BUILD_DIR/bin/sbctl ]] || { sb_die "$SB_BUILD_DIR/bin/sbctl not built (sb_build)"; return 1; }
    [[ -s $SB_VAR/pg/port ]] || { sb_die "PostgreSQL not set up (sb_pg_start)"; return 1; }
    SB_PG_DSN="$(sb_pg_dsn)"
    export SB_PG_DSN
    local log="$SB_VAR/log/seed.log"
    sb_secret_file "$SB_VAR/emu-upstream-key" || return 1
    sb_msg "migrating and seeding (log: $log)"
    {
        printf '=== %s seed\n' "$(date -u +%FT%TZ)"
        sb_sbctl migrate &&
            sb_sbctl account create dev --if-not-exists &&
            sb_sbctl account enable dev &&
            sb_sbctl group create default --if-not-exists &&
            sb_sbctl group allow default '*' &&
            sb_sbctl model add emu-chat --if-not-exists --provider openai-chat \
                --base-url "http://127.0.0.1:$SB_EMU_PORT/v1" --upstream-model emu-model \
                --credential-ref SB_EMU_UPSTREAM_KEY &&
            sb_sbctl model set emu-chat --provider openai-chat --base-url "http://127.0.0.1:$SB_EMU_PORT/v1" \
                --upstream-model emu-model --credential-ref SB_EMU_UPSTREAM_KEY --max-output-tokens 65536 &&
            sb_sbctl model enable emu-chat &&
            sb_seed_model emu-responses openai-responses "http://127.0.0.1:$SB_EMU_PORT/v1" &&
            sb_seed_model emu-claude anthropic "http://127.0.0.1:$SB_EMU_PORT" &&
            sb_seed_model emu-gemini gemini "http://127.0.0.1:$SB_EMU_PORT/v1beta" &&
            sb_seed_model emu-embed openai-chat "http://127.0.0.1:$SB_EMU_PORT/v1" text-embedding-3-small &&
            sb_seed_model gpt-image-1 openai-chat "http://127.0.0.1:$SB_EMU_PORT/v1" gpt-image-1 &&
            sb_seed_model emu-gemini-image gemini "http://127.0.0.1:$SB_EMU_PORT/v1beta" gemini-2.5-flash-image &&
            { sb_sbctl search-backend remove emu >/dev/null 2>&1 || true; } &&
            sb_sbctl search-backend add emu --kind searxng --base-url "http://127.0.0.1:$SB_EMU_PORT/_search" --default
    } >>"$log" || { sb_die "seeding failed (see above and $log)"; return 1; }

    # The dev key is kept across runs; it is re-created only when the database
    # no longer knows it (e.g. var/pg was wiped), and re-enabled if disabled.
    local keyf="$SB_VAR/dev-key" key disp row
    if [[ -s $keyf ]]; then
        key="$(<"$keyf")"
        disp="${key:0:12}…${key: -4}"
        row="$(sb_sbctl key list --account dev | awk -v d="$disp" '$2 == d { print $1, $5 }')" || return 1
        if [[ -z $row ]]; then
            sb_msg "the database does not know $keyf; creating a new dev key"
            rm -f "$keyf"
        elif [[ ${row#* } != true ]]; then
            sb_sbctl key enable "${row%% *}" >>"$log" || return 1
        fi
    fi
    if [[ ! -s $keyf ]]; then
        key="$(sb_sbctl key create --account dev --group default --name dev 2>>"$log")" ||
            { sb_die "could not create the dev key (see $log)"; return 1; }
        (umask 077 && printf '%s\n' "$key" >"$keyf.tmp") && mv "$keyf.tmp" "$keyf" || return 1
        sb_msg "dev key written to $keyf"
    fi

    # The dev admin key (the admin API and console), kept the same way.
    keyf="$SB_VAR/admin-key"
    if [[ -s $keyf ]]; then
        key="$(<"$keyf")"
        disp="${key:0:12}…${key: -4}"
        row="$(sb_sbctl admin-key list | awk -v d="$disp" '$2 == d { print $1, $3 }')" || return 1
        if [[ -z $row ]]; then
            rm -f "$keyf"
        elif [[ ${row#* } != true ]]; then
            sb_sbctl admin-key enable "${row%% *}" >>"$log" || return 1
        fi
    fi
    if [[ ! -s $keyf ]]; then
        key="$(sb_sbctl admin-key create --name dev 2>>"$log")" ||
            { sb_die "could not create the dev admin key (see $log)"; return 1; }
        (umask 077 && printf '%s\n' "$key" >"$keyf.tmp") && mv "$keyf.tmp" "$keyf" || return 1
        sb_msg "dev admin key written to $keyf"
    fi
}

# --- processes -----------------------------------------------------------------

# Starts NAME in the background in its own session (so it survives the
# terminal of a detached "up"), appending to $SB_VAR/log/NAME.log.
sb_spawn() {
    local name=$1 bin=$2
    shift 2
    local log="$SB_VAR/log/$name.log" pidf="$SB_VAR/run/$name.pid" pid
    [[ -x $bin ]] || { sb_die "$bin not found (not built yet?)"; return 1; }
    if pid="$(sb_proc_pid "$name")"; then
        sb_die "$name is already running (pid $pid)"
        return 1
    fi
    mkdir -p "$SB_VAR/log" "$SB_VAR/run"
    rm -f "$pidf"
    printf '=== %s starting %s\n' "$(date -u +%FT%TZ)" "$name" >>"$log"
    # The wrapper records its own pid and execs the binary, so the pid file is
    # right even when setsid has to fork (caller with job control on).
    # shellcheck disable=SC2016
    setsid bash -c 'printf "%s\n" "$$" >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidf" "$bin" "$@" \
        >>"$log" 2>&1 </dev/null &
    local i
    for ((i = 0; i < 100; i++)); do
        sb_proc_pid "$name" >/dev/null && return 0
        # Gone already (exec failed, or it exited at once)?
        [[ -s $pidf ]] && ! sb_pid_alive "$(<"$pidf")" && break
        sleep 0.05
    done
    sb_log_tail "$name"
    sb_die "$name did not start (see $log)"
}

# Stops one process: SIGNAL (default TERM), wait up to 10 s, then KILL.
sb_stop_proc() {
    sb_defaults || return 1
    local name=$1 sig=${2:-TERM} pid i
    if pid="$(sb_proc_pid "$name")"; then
        kill -s "$sig" "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            sb_pid_alive "$pid" || break
            sleep 0.1
        done
        if sb_pid_alive "$pid"; then
            sb_msg "$name (pid $pid) did not stop within 10 s; killing it"
            kill -s KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$SB_VAR/run/$name.pid"
}

sb_frontend_ports() {
    local k
    if [[ -n ${SB_FRONTEND_PORTS:-} ]]; then
        printf '%s\n' "$SB_FRONTEND_PORTS"
        return 0
    fi
    for ((k = 0; k < SB_FRONTENDS; k++)); do printf '%s ' "$((SB_PORT + k))"; done
    printf '\n'
}

sb_wait_port() {
    local port=$1 name=$2 i
    for ((i = 0; i < 100; i++)); do
        sb_port_busy "$port" && return 0
        sb_proc_pid "$name" >/dev/null || { sb_log_tail "$name"; sb_die "$name exited during startup"; return 1; }
        sleep 0.1
    done
    sb_log_tail "$name"
    sb_die "$name is not listening on 127.0.0.1:$port after 10 s"
}

sb_start_emulator() {
    sb_defaults || return 1
    local extra=()
    read -ra extra <<<"${SB_EMU_ARGS:-}"
    sb_secret_file "$SB_VAR/emu-upstream-key" || return 1
    SB_EMU_UPSTREAM_KEY="$(<"$SB_VAR/emu-upstream-key")"
    export SB_EMU_UPSTREAM_KEY SB_EMU_URL="http://127.0.0.1:$SB_EMU_PORT"
    ! sb_port_busy "$SB_EMU_PORT" || { sb_die "emulator port $SB_EMU_PORT is in use (another stack? set SB_EMU_PORT)"; return 1; }
    # SB_EMU_KEY is the emulator's --require-key from the environment, which
    # keeps the secret out of ps.
    SB_EMU_KEY="$SB_EMU_UPSTREAM_KEY" sb_spawn emulator "$SB_BUILD_DIR/bin/sb-emulator" \
        --listen "127.0.0.1:$SB_EMU_PORT" "${extra[@]}" || return 1
    sb_wait_port "$SB_EMU_PORT" emulator
}

# Sets variable VAR to process NAME's admin port (/metrics /healthz /readyz),
# picked once per stack and kept in $SB_VAR/run/NAME.admin-port, so a
# restarted process answers where it did.
sb_admin_port() {
    local -n _sb_admin=$2
    local f="$SB_VAR/run/$1.admin-port" _sb_admin_pick
    if [[ -s $f ]]; then
        _sb_admin=$(<"$f")
        return 0
    fi
    sb_pick_port _sb_admin_pick || return 1
    mkdir -p "$SB_VAR/run" && printf '%s\n' "$_sb_admin_pick" >"$f"
    _sb_admin=$_sb_admin_pick
}

# The admin URLs of the stack's processes, space-separated, in start order.
sb_admin_urls() {
    local f urls=()
    for f in "$SB_VAR"/run/$1*.admin-port; do
        [[ -s $f ]] && urls+=("http://127.0.0.1:$(<"$f")")
    done
    printf '%s' "${urls[*]}"
}

# Broker K's process name: "broker" for the first, brokerK for the others.
sb_broker_name() {
    if (($1 <= 1)); then printf 'broker'; else printf 'broker%s' "$1"; fi
}

# Exports SB_BROKER_FRONTEND_ENDPOINT and SB_BROKER_WORKER_ENDPOINT as the
# comma-separated lists of the endpoints of the brokers started so far (each
# recorded in $SB_VAR/run/NAME.endpoints): what frontends and workers connect to.
sb_broker_lists() {
    local k f fe we fes=() wes=()
    for ((k = 1; k <= ${SB_BROKERS:-1}; k++)); do
        f="$SB_VAR/run/$(sb_broker_name "$k").endpoints"
        [[ -s $f ]] || continue
        read -r fe we <"$f"
        fes+=("$fe")
        wes+=("$we")
    done
    ((${#fes[@]} > 0)) || { sb_die "no broker started (sb_start_broker)"; return 1; }
    SB_BROKER_FRONTEND_ENDPOINT=$(IFS=,; printf '%s' "${fes[*]}")
    SB_BROKER_WORKER_ENDPOINT=$(IFS=,; printf '%s' "${wes[*]}")
    export SB_BROKER_FRONTEND_ENDPOINT SB_BROKER_WORKER_ENDPOINT
}

# Starts broker K (default 1) of SB_BROKERS, on the ports it had before when
# it is restarted (else SB_BROKER_*_PORT for the first, or free ports), and
# exports the endpoint lists (sb_broker_lists).
sb_start_broker() {
    sb_defaults || return 1
    local k=${1:-1} name bf bw extra=() i ap fe we f
    name=$(sb_broker_name "$k")
    f="$SB_VAR/run/$name.endpoints"
    read -ra extra <<<"${SB_BROKER_ARGS:-}"
    sb_admin_port "$name" ap || return 1
    extra+=(--admin-listen "127.0.0.1:$ap")
    mkdir -p "$SB_VAR/run"
    if [[ ${SB_BROKER_TRANSPORT:-tcp} == ipc ]]; then
        # Unix domain sockets: every process on this host (no TCP stack per hop).
        fe="ipc://$SB_VAR/run/$name-frontends.sock" we="ipc://$SB_VAR/run/$name-workers.sock"
        rm -f "${fe#ipc://}" "${we#ipc://}"
        printf '%s %s\n' "$fe" "$we" >"$f"
        sb_spawn "$name" "$SB_BUILD_DIR/bin/sb-broker" --frontend-endpoint "$fe" --worker-endpoint "$we" \
            "${extra[@]}" || return 1
        for ((i = 0; i < 100; i++)); do
            [[ -S ${fe#ipc://} && -S ${we#ipc://} ]] && { sb_broker_lists; return; }
            sleep 0.1
        done
        sb_log_tail "$name"
        sb_die "$name did not bind its ipc endpoints"
        return 1
    fi
    if ((k <= 1)); then
        bf=${SB_BROKER_FRONTEND_PORT:-}
        bw=${SB_BROKER_WORKER_PORT:-}
    fi
    if [[ -z ${bf:-} && -s $f ]]; then # a restart: the same ports, which the others connect to
        read -r fe we <"$f"
        bf=${fe##*:} bw=${we##*:}
    fi
    [[ -n ${bf:-} ]] || sb_pick_port bf || return 1
    [[ -n ${bw:-} ]] || sb_pick_port bw || return 1
    printf 'tcp://127.0.0.1:%s tcp://127.0.0.1:%s\n' "$bf" "$bw" >"$f"
    sb_spawn "$name" "$SB_BUILD_DIR/bin/sb-broker" --frontend-endpoint "tcp://127.0.0.1:$bf" \
        --worker-endpoint "tcp://127.0.0.1:$bw" "${extra[@]}" || return 1
    sb_wait_port "$bf" "$name" && sb_broker_lists
}

# Worker K (1-based), named wK; needs sb_start_broker's endpoints.
sb_start_worker() {
    sb_defaults || return 1
    local k=$1 extra=() ap
    read -ra extra <<<"${SB_WORKER_ARGS:-}"
    sb_admin_port "worker$k" ap || return 1
    extra+=(--admin-listen "127.0.0.1:$ap")
    [[ -n ${SB_BROKER_WORKER_ENDPOINT:-} ]] || { sb_die "broker not started (sb_start_broker)"; return 1; }
    sb_spawn "worker$k" "$SB_BUILD_DIR/bin/sb-worker" --broker "$SB_BROKER_WORKER_ENDPOINT" --models '*' \
        --concurrency "$SB_WORKER_CONCURRENCY" --name "w$k" "${extra[@]}"
}

# Frontend K (1-based), named feK, on the K-th of sb_frontend_ports.
sb_start_frontend() {
    sb_defaults || return 1
    local k=$1 ports=() extra=() ap
    read -ra ports <<<"$(sb_frontend_ports)"
    read -ra extra <<<"${SB_FRONTEND_ARGS:-}"
    # Frontend K's admin listener (and console) is on SB_ADMIN_PORT + K - 1
    # (default SB_PORT + 1000: 9080 beside 8080) unless that is taken.
    ap=$((${SB_ADMIN_PORT:-$((${ports[0]} + 1000))} + k - 1))
    if [[ ! -s $SB_VAR/run/frontend$k.admin-port ]] && ! sb_port_busy "$ap" && [[ $_SB_PORTS_GIVEN != *" $ap "* ]]; then
        _SB_PORTS_GIVEN+="$ap "
        mkdir -p "$SB_VAR/run" && printf '%s\n' "$ap" >"$SB_VAR/run/frontend$k.admin-port"
    fi
    sb_admin_port "frontend$k" ap || return 1
    extra+=(--admin-listen "127.0.0.1:$ap")
    local port="${ports[$((k - 1))]:-}"
    [[ -n $port ]] || { sb_die "no port for frontend $k"; return 1; }
    [[ -n ${SB_BROKER_FRONTEND_ENDPOINT:-} ]] || { sb_die "broker not started (sb_start_broker)"; return 1; }
    [[ -n ${SB_PG_DSN:-} ]] || { sb_die "SB_PG_DSN unset (sb_pg_start)"; return 1; }
    ! sb_port_busy "$port" || { sb_die "port $port is in use (another stack? deploy/local/down, or set SB_PORT)"; return 1; }
    sb_key_file "$SB_VAR/reasoning.key" || return 1
    sb_spawn "frontend$k" "$SB_BUILD_DIR/bin/sb-frontend" --listen "127.0.0.1:$port" \
        --broker "$SB_BROKER_FRONTEND_ENDPOINT" --name "fe$k" --reasoning-key-file "$SB_VAR/reasoning.key" \
        --spool-dir "$SB_VAR/spool" --embedding-model emu-embed "${extra[@]}"
}

# GET /v1/models with the dev key on PORT; the key goes to curl on stdin.
sb_http_ready() {
    printf 'Authorization: Bearer %s\n' "$(<"$SB_VAR/dev-key")" |
        curl -fsS -o /dev/null --max-time 2 -H @- "http://127.0.0.1:$1/v1/models" 2>/dev/null
}

# Waits until every frontend answers GET /v1/models (SB_READY_TIMEOUT s); if a
# process dies meanwhile, shows its log and fails.
sb_wait_ready() {
    sb_defaults || return 1
    local ports=() port name deadline=$((SECONDS + SB_READY_TIMEOUT))
    read -ra ports <<<"$(sb_frontend_ports)"
    [[ -s $SB_VAR/dev-key ]] || { sb_die "$SB_VAR/dev-key missing (sb_seed)"; return 1; }
    for port in "${ports[@]}"; do
        until sb_http_ready "$port"; do
            for name in $(sb_proc_names); do
                sb_proc_pid "$name" >/dev/null || { sb_log_tail "$name"; sb_die "$name exited"; return 1; }
            done
            if ((SECONDS >= deadline)); then
                for name in $(sb_proc_names); do [[ $name == frontend* ]] && sb_log_tail "$name"; done
                sb_die "no frontend answered GET http://127.0.0.1:$port/v1/models within ${SB_READY_TIMEOUT}s"
                return 1
            fi
            sleep 0.2
        done
    done
    sleep 0.3
    for name in $(sb_proc_names); do
        sb_proc_pid "$name" >/dev/null || { sb_log_tail "$name"; sb_die "$name exited"; return 1; }
    done
}

sb_start_stack() {
    sb_defaults || return 1
    local k ports=() urls=() missing=() b
    for b in sb-emulator sb-broker sb-worker sb-frontend; do
        [[ -x $SB_BUILD_DIR/bin/$b ]] || missing+=("$b")
    done
    ((${#missing[@]} == 0)) || { sb_die "not built: ${missing[*]} (in $SB_BUILD_DIR/bin)"; return 1; }
    [[ -s $SB_VAR/pg/port ]] || { sb_die "PostgreSQL not set up (sb_pg_start)"; return 1; }
    SB_PG_DSN="$(sb_pg_dsn)"
    export SB_PG_DSN
    read -ra ports <<<"$(sb_frontend_ports)"
    ((${#ports[@]} > 0)) || { sb_die "no frontend ports"; return 1; }
    for k in "${ports[@]}"; do urls+=("http://127.0.0.1:$k"); done
    export SB_URL="${urls[0]}" SB_FRONTEND_URLS="${urls[*]}"
    if [[ $SB_SANITIZE == ON ]]; then
        export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:print_summary=1}"
        export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    fi

    sb_msg "starting emulator, ${SB_BROKERS:-1} broker(s), $SB_WORKERS worker(s), ${#ports[@]} frontend(s) (logs: $SB_VAR/log)"
    rm -f "$SB_VAR"/run/*.admin-port # a new stack picks its admin ports afresh
    sb_start_emulator || { sb_stop_procs; return 1; }
    rm -f "$SB_VAR"/run/broker*.endpoints
    for ((k = 1; k <= ${SB_BROKERS:-1}; k++)); do sb_start_broker "$k" || { sb_stop_procs; return 1; }; done
    for ((k = 1; k <= SB_WORKERS; k++)); do sb_start_worker "$k" || { sb_stop_procs; return 1; }; done
    for ((k = 1; k <= ${#ports[@]}; k++)); do sb_start_frontend "$k" || { sb_stop_procs; return 1; }; done
    SB_FRONTEND_ADMIN_URLS=$(sb_admin_urls frontend) SB_BROKER_ADMIN_URLS=$(sb_admin_urls broker)
    SB_BROKER_ADMIN_URL=${SB_BROKER_ADMIN_URLS%% *} SB_WORKER_ADMIN_URLS=$(sb_admin_urls worker)
    export SB_FRONTEND_ADMIN_URLS SB_BROKER_ADMIN_URL SB_BROKER_ADMIN_URLS SB_WORKER_ADMIN_URLS
    sb_write_env
    sb_wait_ready || { sb_stop_procs; return 1; }
    sb_msg "ready: ${SB_FRONTEND_URLS}"
}

# Stops every process with a pid file: SIGTERM all, wait up to 10 s, SIGKILL the rest.
sb_stop_procs() {
    sb_defaults || return 1
    local name pid pids=() names=() i
    for name in $(sb_proc_names); do
        if pid="$(sb_proc_pid "$name")"; then
            kill -s TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
            names+=("$name")
        fi
    done
    for ((i = 0; i < 100; i++)); do
        local alive=0
        for pid in "${pids[@]}"; do sb_pid_alive "$pid" && alive=1; done
        ((alive)) || break
        sleep 0.1
    done
    for i in "${!pids[@]}"; do
        if sb_pid_alive "${pids[$i]}"; then
            sb_msg "${names[$i]} (pid ${pids[$i]}) did not stop within 10 s; killing it"
            kill -s KILL "${pids[$i]}" 2>/dev/null || true
        fi
    done
    ((${#names[@]})) && sb_msg "stopped: ${names[*]}"
    for name in $(sb_proc_names); do rm -f "$SB_VAR/run/$name.pid"; done
    return 0
}

sb_stop_stack() {
    sb_defaults || return 1
    sb_stop_procs
    sb_pg_stop
}

sb_status() {
    sb_defaults || return 1
    local name pid
    for name in $(sb_proc_names); do
        if pid="$(sb_proc_pid "$name")"; then
            printf '%-12s running (pid %s)\n' "$name" "$pid"
        else
            printf '%-12s not running\n' "$name"
        fi
    done
    if sb_pg_running 2>/dev/null; then
        printf '%-12s running on 127.0.0.1:%s\n' postgres "$(<"$SB_VAR/pg/port")"
    else
        printf '%-12s not running\n' postgres
    fi
}

sb_sanitizer_report() {
    sb_defaults || return 1
    local found=1 f
    for f in "$SB_VAR"/log/*.log; do
        [[ -f $f ]] || continue
        if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
            printf -- '--- sanitizer report in %s ---\n' "$f"
            grep -E -A 30 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -n 120
            found=0
        fi
    done
    ((found == 1))
}
