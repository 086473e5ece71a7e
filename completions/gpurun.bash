# gpurun.bash: bash completion for gpurun(1): options, their values, then the command's own
# completion once the command starts. Installed as $(DATADIR)/bash-completion/completions/gpurun.
_gpurun()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	}
	local options='--limit --min-count --max-load --max-memory --min-free --include-nan --exclude
		--order --seed --attempts --interval --wait --timeout --uuid --cpu-fallback --no-lease
		--lock-dir --lazy --preload-lib --source --vendor --smi-timeout --print --show --all
		--json --processes --wide --watch --verbose --explain --help --version -v -h -V'
	local with_value=' --limit --min-count --max-load --max-memory --min-free --exclude --order
		--seed --attempts --interval --timeout --lock-dir --preload-lib --source --vendor
		--smi-timeout '
	with_value=${with_value//[[:space:]]/ }       # one line: each name between two spaces

	# After the command has started, complete for the command itself.
	local i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--) break ;;
		# --watch's value is optional: a duration after it is its own, not the command.
		--watch) ((i + 1 < cword)) && [[ ${words[i + 1]} =~ ^[0-9.]+[smhd]?$ ]] && ((i++)) ;;
		-*) [[ $with_value == *" ${words[i]} "* ]] && ((i++)) ;;
		*) break ;;
		esac
	done
	if ((i < cword)); then
		[[ ${words[i]} == -- ]] && ((i++))
		if ((i < cword)) && declare -F _command_offset >/dev/null; then
			_command_offset "$i"
			return
		fi
		((i == cword)) || { COMPREPLY=($(compgen -f -- "$cur")); return; }
	fi

	case $prev in
	--order) COMPREPLY=($(compgen -W 'first last random load memory free' -- "$cur")); return ;;
	--source) COMPREPLY=($(compgen -W 'auto nvml nvidia-smi amdgpu' -- "$cur")); return ;;
	--vendor) COMPREPLY=($(compgen -W 'nvidia amd any' -- "$cur")); return ;;
	--limit) COMPREPLY=($(compgen -W 'all 1 2 4 8' -- "$cur")); return ;;
	--lock-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--preload-lib) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--min-count | --max-load | --max-memory | --min-free | --exclude | --seed | --attempts | \
		--interval | --timeout | --smi-timeout) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$options" -- "$cur"))
	else
		COMPREPLY=($(compgen -c -- "$cur"))
	fi
}
complete -F _gpurun gpurun
