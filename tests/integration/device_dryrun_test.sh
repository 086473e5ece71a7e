#!/usr/bin/env bash
# device_dryrun_test.sh: the real-GPU acceptance script (tests/device/acceptance.sh) in its dry
# run against the fakes, once on one simulated GPU (the device machine's shape) and once on three,
# its table turned into TAP lines: a check that fails here would fail on the device too.
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
		[[ $line == -* ]] && continue
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

for gpus in 1 3; do
	label="dry run, $gpus GPU(s)"
	bash "$ROOT/tests/device/acceptance.sh" --dry-run --gpus "$gpus" >"$SCRATCH/dry-$gpus.txt" 2>&1
	status=$?
	if ! tap_from_table "$label" "$SCRATCH/dry-$gpus.txt"; then
		not_ok "$label: acceptance.sh printed its table" "exit $status" \
			"$(tail -n 15 "$SCRATCH/dry-$gpus.txt")"
	elif [ "$status" != 0 ] && ! grep -q '| FAIL ' "$SCRATCH/dry-$gpus.txt"; then
		not_ok "$label: acceptance.sh exit status" "exit $status with no failed check"
	fi
done
