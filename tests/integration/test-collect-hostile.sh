#!/bin/sh
# Proves: a misbehaving guest is contained. For each misbehaviour the fake
# agent can show (garbage and oversized frames on the control port, hostile
# strings in HELLO_REPLY / STATS / META / ERROR, a 1 TiB META announcement, a
# wrong sub-buffer size, a stream cut mid-page, STATS claiming more bytes
# than sent, no answer to STOP), recorded next to a well-behaved guest:
# the collector does not crash (exit 3), names the bad guest in a message and
# in manifest.json's problems, writes nothing outside -o DIR, keeps
# manifest.json valid JSON, and the good guest's file is exact. And a guest
# that sends its bundle open as it should (--open-meta) is recorded exactly.
echo "collect: each guest misbehaviour is contained (exit 3, named, no stray files), the other guest unaffected"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
# A guest that never confirms STOP costs the collector its 60 s stop timeout.
COLLECT_LIMIT=100

# Relative paths a hostile name might smuggle in would land here.
mkdir -p "$WORK/cwd"
cd "$WORK/cwd" || fail "cd"
oracle "$DATA/cap-guest" 2
for bad in garbage oversize evil-text evil-clock evil-meta evil-error huge-meta endless-meta \
	open-meta wrong-subbuf truncate-stream lie-bytes stall-stop; do
	case $bad in
	evil-*) flag=--evil-strings=${bad#evil-} ;;
	*) flag=--$bad ;;
	esac
	pg=$WORK/pg-$bad pe=$WORK/pe-$bad out=$WORK/out-$bad
	mkdir -p "$pg" "$pe"
	fake good-$bad --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
	gpid=$FAKE_PID
	fake evil-$bad --listen "$pe" --fixture "$DATA/cap-guest" --repeat 2 --retime $flag
	epid=$FAKE_PID
	touch "$WORK/stamp"
	sleep 0.01
	if [ $bad = endless-meta ]; then
		# 128 MiB of bundle take seconds on a busy machine (ASan: more than the 2 s run and
		# its 8 s stop): the recording is stopped once the collector has said it refused it.
		collect_start $bad --chardev-dir "$pg" --name good-$bad --chardev-dir "$pe" \
			--name evil-$bad -e sched -o "$out" --duration 60 --stop-timeout 8
		wait_log "$_cl" "passed the 134217728-byte limit" 60 "$bad: the bundle was not refused"
		sleep 2	# the good guest recorded at least as long as the others
		kill -INT $COLLECT_PID
		collect_wait 30
	else
		collect $bad --chardev-dir "$pg" --name good-$bad --chardev-dir "$pe" --name evil-$bad \
			-e sched -o "$out" --duration 2 --stop-timeout 8
	fi
	fake_end $gpid
	fake_end $epid
	log=$WORK/$bad.log
	[ $RC -lt 128 ] || { show "$log"; fail "$bad: collector died of signal $((RC - 128))"; }
	if [ $bad = evil-text ]; then
		# Legal strings, only nasty: the guest may be recorded normally.
		[ $RC = 0 ] || [ $RC = 3 ] || { show "$log"; fail "$bad: exit $RC"; }
	elif [ $bad = open-meta ]; then
		# Not a misbehaviour: the bundle in open chunks, the last with the real total.
		[ $RC = 0 ] || { show "$log" "$WORK/evil-$bad.fake"; fail "$bad: exit $RC, want 0"; }
		grep -q "META sent: .* chunks, all open but the last" "$WORK/evil-$bad.fake" ||
			{ show "$WORK/evil-$bad.fake"; fail "$bad: the fake agent sent no open META"; }
	else
		[ $RC = 3 ] || { show "$log" "$WORK/evil-$bad.fake"; fail "$bad: collector exited $RC, want 3"; }
		grep -q "evil-$bad" "$log" || { show "$log"; fail "$bad: no message names guest evil-$bad"; }
		[ -n "$(guest_json "$out" evil-$bad '.problems // empty')" ] ||
			fail "$bad: manifest lists no problem for evil-$bad"
	fi
	jq -e . "$out/manifest.json" >/dev/null || { show "$out/manifest.json"; fail "$bad: manifest.json is not valid JSON"; }
	check_exact "$out" good-$bad "$DATA/cap-guest" 2
	[ -z "$(guest_json "$out" good-$bad '.problems // empty')" ] ||
		fail "$bad: the good guest got problems: $(guest_json "$out" good-$bad .problems)"
	stray=$(new_files_outside "$out" "$pg" "$pe")
	[ -z "$stray" ] || fail "$bad: files written outside the output directory: $stray"
	[ -z "$(find "$WORK" /tmp -maxdepth 3 -name '*vt-evil*' 2>/dev/null)" ] || fail "$bad: a file named after the evil event exists"
	case $bad in
	evil-text)
		[ "$RC" = 0 ] && check_exact "$out" evil-$bad "$DATA/cap-guest" 2
		;;
	open-meta)
		check_exact "$out" evil-$bad "$DATA/cap-guest" 2
		;;
	endless-meta)
		# Refused at the chunk past the limit, with nothing of it kept.
		grep -q "guest evil-$bad: its open metadata bundle passed the 134217728-byte limit at 1342[0-9]* bytes" "$log" ||
			{ show "$log"; fail "$bad: no message about the open bundle over the limit"; }
		;;
	truncate-stream)
		j=".cpus[] | select(.cpu == 0)"
		[ "$(guest_json "$out" evil-$bad "$j | .fragment_bytes")" = 2048 ] ||
			fail "$bad: manifest cpu0 fragment_bytes = $(guest_json "$out" evil-$bad "$j | .fragment_bytes"), want 2048"
		[ "$(guest_json "$out" evil-$bad "$j | .pages")" = 1 ] ||
			fail "$bad: manifest cpu0 pages = $(guest_json "$out" evil-$bad "$j | .pages"), want 1"
		report "$WORK/trunc.txt" -i "$out/guest-evil-$bad.dat"
		[ "$(cpu_events "$WORK/trunc.txt" 0)" = $((ORACLE_CPU0 / 2)) ] ||
			fail "$bad: cpu0 shows $(cpu_events "$WORK/trunc.txt" 0) events, want the whole page's $((ORACLE_CPU0 / 2))"
		[ "$(cpu_events "$WORK/trunc.txt" 1)" = "$ORACLE_CPU1" ] || fail "$bad: cpu1 events differ"
		;;
	wrong-subbuf)
		# 4 KiB pages announced as 8 KiB ones: one error naming the guest and CPU, every
		# page kept aside, none reframed into the trace.
		n=$(grep -c "evil-$bad cpu[01]: the pages are not the announced 8192-byte sub-buffers" "$log")
		[ "$n" -ge 1 ] && [ "$n" -le 2 ] || { show "$log"; fail "$bad: $n size-mismatch errors, want one per CPU with data"; }
		[ "$(guest_json "$out" evil-$bad '[.cpus[].pages] | add')" = 0 ] ||
			fail "$bad: $(guest_json "$out" evil-$bad '[.cpus[].pages] | add') misframed pages went into the trace"
		;;
	lie-bytes)
		# Every byte that was sent is kept; the claim is flagged, not trusted.
		report "$WORK/lie.txt" -i "$out/guest-evil-$bad.dat"
		[ "$(all_events "$WORK/lie.txt")" = $((ORACLE_CPU0 + ORACLE_CPU1)) ] ||
			fail "$bad: the file shows $(all_events "$WORK/lie.txt") events, want $((ORACLE_CPU0 + ORACLE_CPU1))"
		;;
	esac
	echo "ok: $bad (exit $RC): $(grep -m1 -E "(error|warning).*evil-$bad" "$log" | cut -c1-160)"
done
echo "PASS"
