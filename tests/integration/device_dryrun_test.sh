#!/usr/bin/env bash
# device_dryrun_test.sh: the real-GPU acceptance script (tests/device/acceptance.sh) in its dry
# run against the fakes: on one simulated GPU (the device machine's shape), on three, and built by
# gcc alone; its table turned into TAP lines: a check that fails here would fail on the device too.
. "$(dirname "$0")/lib.sh"

# tap_from_table LABEL FILE: one TAP line per row of the table that ends the script's output.
tap_from_table() {
	local label=$1 file=$2 in_table=false rows=0 name result detail
	while IFS= read -r line; do
		if [[ $line =~ ^check\ +\|\ result\ +\|\ detail$ ]]; then
			in_table=true
			continue
		fi
		$in_table || continue
		# The rule under the header, and what the script says on stderr after the table.
		[[ $line == *" | "*" | "* ]] || continue
		name=${line%% | *}
		name=${name%"${name##*[! ]}"}
		result=${line#* | }
		detail=${result#* | }
		result=${result%% | *}
		result=${result// /}
		rows=$((rows + 1))
		case $result in
		ok | info) ok "$label: $name" ;;
		skip) skip "$label: $name" "$detail" ;;
		*) not_ok "$label: $name" "$detail" ;;
		esac
	done <"$file"
	[ "$rows" -gt 0 ]
}

# dry_run LABEL SLUG OPTION...: one run of the script, its table as TAP lines.
dry_run() {
	local label=$1 output=$SCRATCH/$2.txt status
	shift 2
	bash "$ROOT/tests/device/acceptance.sh" --dry-run "$@" >"$output" 2>&1
	status=$?
	if ! tap_from_table "$label" "$output"; then
		not_ok "$label: acceptance.sh printed its table" "exit $status" "$(tail -n 15 "$output")"
	elif [ "$status" != 0 ] && ! grep -q '| FAIL ' "$output"; then
		not_ok "$label: acceptance.sh exit status" "exit $status with no failed check"
	fi
}

dry_run "dry run, 1 GPU(s)" dry-1 --gpus 1
dry_run "dry run, 3 GPU(s)" dry-3 --gpus 3
# The device image is not promised to have make: the build by gcc alone, into a tree of its
# own, must give a gpurun that passes the same checks.
dry_run "dry run, gcc alone" dry-gcc --without-make --build-dir "$SCRATCH/build"
