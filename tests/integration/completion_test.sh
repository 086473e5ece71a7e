#!/usr/bin/env bash
# completion_test.sh: the bash completion from the source tree: where it takes the command to
# start, after every option that takes a value (a value at the end of a line of its list was
# taken for the command), and after --watch, whose value is optional. The installed copy is
# checked by install_test.sh.
. "$(dirname "$0")/lib.sh"

# shellcheck source=/dev/null
source "$ROOT/completions/gpurun.bash"
# A stand-in for bash-completion's _command_offset: says where the command starts.
_command_offset() { COMPREPLY=("command-at:$1:${COMP_WORDS[$1]}"); }
complete_words() { # WORDS...: COMPREPLY for the last word
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_gpurun
	printf '%s\n' "${COMPREPLY[*]}"
}

for option in --limit --min-count --max-load --max-memory --min-free --exclude --order --seed \
	--attempts --interval --timeout --lock-dir --preload-lib --source --vendor --smi-timeout; do
	got=$(complete_words gpurun "$option" 1 python tr)
	if [ "$got" = "command-at:3:python" ]; then
		ok "bash: the word after $option is its value, not the command"
	else
		not_ok "bash: the word after $option is its value, not the command" "got: $got"
	fi
done
got=$(complete_words gpurun --show --watch 5 --wi)
check "bash: --watch 5: the duration is --watch's (got '$got')" test "$got" = "--wide"
got=$(complete_words gpurun --watch python tr)
check "bash: --watch python: a word that is no duration starts the command (got '$got')" \
	test "$got" = "command-at:2:python"
got=$(complete_words gpurun --order m)
check "bash: --order m completes the order (got '$got')" test "$got" = "memory"
got=$(complete_words gpurun -- python tr)
check "bash: after --, the command (got '$got')" test "$got" = "command-at:2:python"

# zsh: -v, -V and -h cannot be bundled (gpurun refuses -vh), so none is offered after another.
if command -v zsh >/dev/null; then
	check "zsh completion parses" zsh -n "$ROOT/completions/_gpurun"
	check "zsh completion offers no bundled short options (_arguments without -s)" \
		grep -q "^_arguments -S \\\\$" "$ROOT/completions/_gpurun"
else
	skip "zsh completion parses" "zsh is not installed"
fi
