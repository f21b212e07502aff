# The shell helpers every lifecycle script shares (scripts/db, pooler, lab,
# nginx, apache, with-servers): sourced, never run. Builtins where a command
# would do: scripts/lab calls these in loops, and on a busy machine every
# fork counts.

# alive PID: PID is a live process (not a zombie: a killed server whose
# parent has gone may stay one where nothing reaps it).
alive() {
    local k v
    { while read -r k v; do
          [ "$k" = State: ] || continue
          case $v in Z* | X*) return 1 ;; *) return 0 ;; esac
      done < "/proc/$1/status"; } 2> /dev/null
    return 1
}

# pid_in FILE: the pid in FILE's first line, if that process is alive.
pid_in() {
    local p=""
    { read -r p < "$1"; } 2> /dev/null || [ -n "$p" ] || return 1
    p=${p//[!0-9]/}
    [ -n "$p" ] && alive "$p" && echo "$p"
}

# pid_of FILE NAME: the pid in FILE if that process is alive and is NAME
# (so a pid reused after a crash does not count).
pid_of() {
    local p c=""
    p=$(pid_in "$1") || return 1
    { read -r c < "/proc/$p/comm"; } 2> /dev/null || return 1
    case $c in "$2"*) echo "$p" ;; *) return 1 ;; esac
}

# await_gone PID SECONDS: 0 once PID has gone (or is a zombie), 1 if it is
# still alive after SECONDS.
await_gone() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        alive "$1" || return 0
        sleep 0.1
    done
    ! alive "$1"
}

# stop_pid PID SIGNAL SECONDS: SIGNAL, up to SECONDS for it to go, then
# SIGKILL. 0 when PID was not running.
stop_pid() {
    kill -"$2" "$1" 2> /dev/null || return 0
    await_gone "$1" "$3" || kill -KILL "$1" 2> /dev/null || true
}

# write_secret FILE [OWNER]: stdin into FILE, mode 0600 from its first
# byte (umask), owned by OWNER when given (a service account that must read
# it), replaced whole (a reader never sees half of it).
write_secret() {
    (umask 077 && cat > "$1.tmp") && chmod 0600 "$1.tmp" || return 1
    if [ -n "${2:-}" ]; then chown "$2" "$1.tmp" || return 1; fi
    mv "$1.tmp" "$1"
}

# web_masters: live pids of the nginx, Apache and PHP-FPM masters whose pid files are
# under $build_root (every ZB_BUILD of make: build, build/asan... is under
# build/; the caller sets it).
web_masters() {
    local f
    find "$build_root" \( -name nginx.pid -o -name httpd.pid -o -name php-fpm.pid \) -type f 2> /dev/null |
        while read -r f; do pid_in "$f" || true; done
}
# labs_up: the labs under build/ that are up (their hosts/ state directory exists).
labs_up() {
    find "$build_root" -mindepth 2 -maxdepth 4 -type d -name hosts -path '*lab/hosts' 2> /dev/null |
        sed 's|/hosts$||'
}
# our_programs: pids of processes whose program is one of build/*/bin.
our_programs() {
    local d p exe
    for d in /proc/[0-9]*; do
        exe=$(readlink "$d/exe" 2> /dev/null) || continue
        case $exe in "$build_root"/*bin/*) p=${d#/proc/}; echo "$p" ;; esac
    done
}

# stop_web_master PID: nginx by QUIT, its graceful stop; Apache and PHP-FPM
# by TERM (QUIT would kill Apache at once; PHP-FPM's front goes with it).
stop_web_master() {
    if [ "$(cat "/proc/$1/comm" 2> /dev/null)" = nginx ]; then stop_pid "$1" QUIT 10; else stop_pid "$1" TERM 10; fi
}
