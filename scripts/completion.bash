# Bash completion for ./zipbench and the programs of build/bin (loader,
# server, loadgen, sqlbench, gen, relay): commands, then each command's
# long options, read from its own --help. Sourced, never run: scripts/setup
# installs it (bash-completion's directory for the user, or
# /etc/bash_completion.d as root), and so does make install (under
# PREFIX/share); `. scripts/completion.bash` loads it by hand.

# The long options a help text names.
_zipbench_options() {
    "$@" --help 2> /dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

_zipbench() {
    local cur=${COMP_WORDS[COMP_CWORD]} door=${COMP_WORDS[0]} root cmd prog
    # The tree of the door: through PATH and a link (make install's).
    door=$(type -P -- "$door" 2> /dev/null) || door=${COMP_WORDS[0]}
    root=$(cd "$(dirname "$(readlink -f -- "$door")")" 2> /dev/null && pwd) || return
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$("$door" help 2> /dev/null | awk '/^  [a-z]/ {print $1}') help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = help ]; then
        COMPREPLY=($(compgen -W "$("$door" help 2> /dev/null | awk '/^  [a-z]/ {print $1}')" -- "$cur"))
        return
    fi
    if [[ $cur == -* ]]; then
        case $cmd in
            load) prog=loader ;; serve) prog=server ;;
            loadgen | sqlbench | gen | relay) prog=$cmd ;;
        esac
        if [ -n "${prog:-}" ] && [ -x "$root/${ZB_BUILD:-build}/bin/$prog" ]; then
            COMPREPLY=($(compgen -W "$(_zipbench_options "$root/${ZB_BUILD:-build}/bin/$prog")" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_zipbench_options "$door" "$cmd")" -- "$cur"))
        fi
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}

_zipbench_program() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_zipbench_options "${COMP_WORDS[0]}")" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

complete -F _zipbench zipbench ./zipbench
complete -F _zipbench_program loader server loadgen sqlbench gen relay \
    build/bin/loader build/bin/server build/bin/loadgen build/bin/sqlbench build/bin/gen build/bin/relay
