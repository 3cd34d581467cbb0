#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The running kernel's own flowtable selftest, nft_flowtable.sh, from
# Debian's linux-source package of that kernel series (tools/setup unpacks
# it; nothing of it is in this repository), run with the module attached
# to its flowtable. It must pass every subtest, and the module must have
# taken packets. The kernel's script has timing of its own: 6.12's
# dscp_fwd subtest fails under TCG with the stock flowtable alone as with
# the module, on a quiet host every time. Such subtests (timing_subtests)
# are shown, not judged. A module run that fails another subtest is judged
# against the stock flowtable alone: the script runs again without the
# module (repeated while it fails), the module run is repeated while its
# verdicts differ from that run's, and the last repeats are compared; a
# subtest that fails under TCG with the stock flowtable too is not held
# against the module. A file that arrives whole with other bytes, in any
# run, fails the test: that is corruption, never timing. The stock run
# only when a verdict needs it halves the test, the longest of every
# kernel's set.
#
# The kernel's script is run unmodified but for what TCG needs:
#   6.1   (tools/testing/selftests/netfilter): its files are 8 to 136 MiB and
#         each transfer gets a fixed 3 s: the files are cut to 0.25 to
#         1.25 MiB (two lines of make_file, by sed, on a copy); the
#         transfer's fixed waits (1 s for the listener, 3 s before both
#         ends are killed) end as soon as the listener listens and both
#         files have arrived whole, under the same deadlines;
#   6.12  (tools/testing/selftests/net/netfilter): given its default MTUs and
#         a 512 KiB file on the command line, so that it skips its second
#         run with random MTUs and up to 64 MB.
# The module is attached the way a user would, right after the ruleset is
# loaded: a wrapper named nft, first in PATH, runs the real nft and, after a
# successful "nft -f" in a namespace that then has flowtable inet filter f1,
# attaches it (once per namespace; the attachment follows the flowtable
# when the script loads new rulesets). A kprobe on the module's
# nfb_enqueue() counts the packets it took (the namespaces, and their
# statistics, are gone when the script ends).
# nfb-timeout: 1500
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool ip nft python3 nc socat cmp

TRACE=/sys/kernel/tracing
tmp=
record_cmd=

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if [ -d "$TRACE/events/nfbkft" ]; then
		echo 0 >"$TRACE/events/nfbkft/enq/enable"
		echo "-:nfbkft/enq" >>"$TRACE/kprobe_events"
	fi
	if [ -n "$record_cmd" ]; then echo "$record_cmd" >"$TRACE/options/record-cmd"; fi
	[ -z "$tmp" ] || rm -rf "$tmp"
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

kver=$(uname -r)
series=$(echo "$kver" | sed -E 's/^([0-9]+)\.([0-9]+).*/\1.\2/')
src=/usr/src/linux-source-$series/tools/testing/selftests
case "$series" in
6.1)
	dir=netfilter
	args=()
	;;
*)
	dir=net/netfilter
	args=(-o 9000 -l 1500 -r 2000 -s 524288)
	;;
esac
[ -f "$src/$dir/nft_flowtable.sh" ] ||
	nfb_cannot_run "no $src/$dir/nft_flowtable.sh (tools/setup unpacks linux-source-$series)"

tmp=$(mktemp -d /tmp/nfb-kft.XXXXXX)
# The script and what it sources, at the same relative places.
mkdir -p "$tmp/$dir" "$tmp/shim"
cp "$src/$dir/nft_flowtable.sh" "$tmp/$dir/"
[ ! -f "$src/$dir/lib.sh" ] || cp "$src/$dir/lib.sh" "$tmp/$dir/"
[ ! -f "$src/net/lib.sh" ] || { mkdir -p "$tmp/net"; cp "$src/net/lib.sh" "$tmp/net/"; }
[ ! -d "$src/net/lib" ] || cp -r "$src/net/lib" "$tmp/net/"
if [ "$series" = 6.1 ]; then
	# shellcheck disable=SC2016 # the script's own $((...)), literally
	sed -i -e 's/^\tSIZE=\$((RANDOM % (1024 \* 128)))$/\tSIZE=$((RANDOM % 1024))/' \
		-e 's/^\tSIZE=\$((SIZE + (1024 \* 8)))$/\tSIZE=$((SIZE + 256))/' \
		"$tmp/$dir/nft_flowtable.sh"
	if grep -q '1024 \* 128\|1024 \* 8)' "$tmp/$dir/nft_flowtable.sh" ||
		! grep -q 'SIZE + 256))$' "$tmp/$dir/nft_flowtable.sh"; then
		log_fail "the 6.1 script's make_file is not as expected: cannot cut its sizes"
		exit "$ksft_fail"
	fi
	# Each transfer waits a fixed 1 s for its listener, then a fixed 3 s
	# before it kills both ends (openbsd nc closes on neither side's EOF),
	# sized for the 136 MiB: 40 s of each run. The same deadlines, left as
	# soon as the listener listens and both received files have the sent
	# file's size; what is compared (cmp) and counted is unchanged.
	# shellcheck disable=SC2016 # the script's own variables, literally
	sed -i -e 's/^\tsleep 1$/\ttimeout 1 sh -c '\''until ip netns exec "$0" ss -lnt | grep -q ":12345 "; do sleep 0.1; done'\'' "$nsb" || true/' \
		-e 's/^\tsleep 3$/\ttimeout 3 sh -c '\''until [ "$(stat -c %s "$1")" = "$(stat -c %s "$0")" ] \&\& [ "$(stat -c %s "$2")" = "$(stat -c %s "$0")" ]; do sleep 0.1; done'\'' "$nsin" "$ns1out" "$ns2out" || true/' \
		"$tmp/$dir/nft_flowtable.sh"
	if [ "$(grep -cP '^\tsleep [13]$' "$tmp/$dir/nft_flowtable.sh")" != 0 ] ||
		[ "$(grep -cP '^\ttimeout [13] sh -c' "$tmp/$dir/nft_flowtable.sh")" != 2 ]; then
		log_fail "the 6.1 script's transfer is not as expected: cannot end its waits early"
		exit "$ksft_fail"
	fi
fi
chmod +x "$tmp/$dir/nft_flowtable.sh"

real_nft=$(command -v nft)
cat >"$tmp/shim/nft" <<EOF
#!/bin/bash
# nfb_kernel_flowtable.sh: nft, then attach the module to inet filter f1.
"$real_nft" "\$@"
rc=\$?
case " \$* " in
*" -f "*) ;;
*) exit \$rc ;;
esac
[ "\$rc" = 0 ] || exit \$rc
mark=$tmp/attached.\${NFB_KFT_RUN:-run}.\$(stat -L -c %i /proc/self/ns/net)
if [ ! -e "\$mark" ] && "$real_nft" list flowtable inet filter f1 >/dev/null 2>&1; then
	python3 "$NFB_LIB/nfb_genl.py" attach inet filter f1 >>"$tmp/attach.log" 2>&1 &&
		touch "\$mark"
fi
exit \$rc
EOF
chmod +x "$tmp/shim/nft"

# The subtests whose verdict depends on timing under TCG, with the stock
# flowtable alone as with the module: 6.12's dscp_fwd (pmtu 0) wants
# packets of the transfer both before and after the flow is offloaded.
# In a clean-clone make check on a quiet host (5 December) it failed in
# all three stock runs and two of three module runs ("expected dscp3 and
# dscp0 > 0 but got 42 , 0"); on loaded hosts it mostly passes. They are
# shown, not compared.
timing_subtests='dscp_fwd'

# run NAME [shim]: the kernel's script; its PASS / FAIL lines, with the
# namespaces' random suffixes and the counts after "but got" taken out, in
# $tmp/NAME.verdicts; those of the timing subtests in $tmp/NAME.timing,
# the others in $tmp/NAME.cmp, which is what is compared.
run() {
	local name=$1 path=$PATH rc=0
	[ "${2:-}" != shim ] || path=$tmp/shim:$PATH
	(cd "$tmp/$dir" && PATH=$path NFB_KFT_RUN=$name ./nft_flowtable.sh "${args[@]}") \
		>"$tmp/$name.log" 2>&1 || rc=$?
	grep -E '^(PASS|FAIL):' "$tmp/$name.log" |
		sed -E -e 's/-[A-Za-z0-9]{6,8}\b//g' -e 's/ *but got .*$//' >"$tmp/$name.verdicts" || true
	grep -E "$timing_subtests" "$tmp/$name.verdicts" >"$tmp/$name.timing" || true
	grep -vE "$timing_subtests" "$tmp/$name.verdicts" >"$tmp/$name.cmp" || true
	echo "INFO: $name: exit $rc, $(grep -c '^PASS' "$tmp/$name.verdicts") PASS, $(grep -c '^FAIL' "$tmp/$name.verdicts") FAIL"
	echo "$rc" >"$tmp/$name.rc"
	# The script follows "FAIL: file mismatch" with ls -l of both files.
	grep -A2 '^FAIL: file mismatch' "$tmp/$name.log" | sed "s/^/INFO: $name: /" || true
	corrupted "$tmp/$name.log" >>"$tmp/corrupted" || true
}

# corrupted LOG: the transfers of LOG that arrived whole but with other
# bytes (same size): never timing, unlike a transfer cut short.
corrupted() {
	awk '/^FAIL: file mismatch/ { what = $0; n = 0; next }
		what != "" && $1 ~ /^-/ { size[++n] = $5
			if (n == 2) { if (size[1] == size[2]) print what; what = "" } }' "$1"
}

[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
record_cmd=$(cat "$TRACE/options/record-cmd")
echo 0 >"$TRACE/options/record-cmd"

# again NAME N [shim]: run NAME's kind again as NAME<N> and let it stand
# for NAME. The kernel's script has timing of its own: under TCG its
# dscp_fwd subtest (pmtu 0) fails now and then, with the stock flowtable
# alone as with the module ("expected dscp3 and dscp0 > 0 but got 42, 0",
# 6.12: whether a bare ACK of ns1 gets through the flowtable during the
# small transfer depends on timing). In one clean make check on 6.12 each
# kind failed it once; on a loaded host the module's run failed twice. A
# failure of either run is shown, then that run is repeated, at most
# twice; what is compared is the last repeat. Each repeat has its own
# name, so that the nft wrapper attaches the module in each.
again() {
	local name=$1 n=$2
	shift 2
	echo "INFO: $name run: $(grep -c '^FAIL' "$tmp/$name.verdicts") FAIL; its output:"
	sed 's/^/INFO:   /' "$tmp/$name.log" | tail -n 30
	echo "INFO: $name run once more, as $name$n"
	run "$name$n" "$@"
	for f in log verdicts timing cmp rc; do
		mv "$tmp/$name.$f" "$tmp/$name-before$n.$f"
		mv "$tmp/$name$n.$f" "$tmp/$name.$f"
	done
}

# stock_passes: the stock run failed nothing but timing subtests, and
# exited 0 unless one of those failed.
stock_passes() {
	! grep -q '^FAIL' "$tmp/stock.cmp" &&
		{ [ "$(cat "$tmp/stock.rc")" = 0 ] || grep -q '^FAIL' "$tmp/stock.timing"; }
}
# same_as_stock: the module run's verdicts are the stock run's, timing
# subtests aside, and it exited as stock did unless a timing subtest went
# differently.
same_as_stock() {
	cmp -s "$tmp/stock.cmp" "$tmp/module.cmp" &&
		{ [ "$(cat "$tmp/module.rc")" = "$(cat "$tmp/stock.rc")" ] ||
			! cmp -s "$tmp/stock.timing" "$tmp/module.timing"; }
}

# module_passes: the module run failed nothing but timing subtests, exited
# 0 unless one of those failed, and gave at least 10 verdicts (every
# series' script gives 11 or more: one that gave fewer stopped early).
module_passes() {
	! grep -q '^FAIL' "$tmp/module.cmp" &&
		{ [ "$(cat "$tmp/module.rc")" = 0 ] || grep -q '^FAIL' "$tmp/module.timing"; } &&
		[ "$(grep -c '^PASS' "$tmp/module.cmp")" -ge 10 ]
}

nfb_load_module
echo "p:nfbkft/enq nf_flow_bulk:nfb_enqueue" >>"$TRACE/kprobe_events"
echo 1 >"$TRACE/events/nfbkft/enq/enable"
run module shim
module_runs=1
stock_runs=0
if ! module_passes; then
	echo "INFO: the module run did not pass: judged against the stock flowtable alone"
	run stock
	stock_runs=1
	for n in 2 3; do
		stock_passes || { again stock "$n"; stock_runs=$n; }
	done
	for n in 2 3; do
		if ! same_as_stock; then
			diff -u "$tmp/stock.verdicts" "$tmp/module.verdicts" | sed 's/^/INFO: /' || true
			again module "$n" shim
			module_runs=$n
		fi
	done
fi
taken=$(awk '$1 == "enq" { print $2 }' "$TRACE/kprobe_profile")
attached=$(find "$tmp" -maxdepth 1 -name 'attached.module*' | wc -l)
echo "INFO: module: attached in $attached of $module_runs run(s), took ${taken:-?} packets"
sed 's/^/INFO: attach: /' "$tmp/attach.log" 2>/dev/null || true

for kind in stock module; do
	[ ! -f "$tmp/$kind.timing" ] || sed "s/^/INFO: $kind, timing subtest: /" "$tmp/$kind.timing"
done
if [ "$stock_runs" = 0 ]; then
	check "nft_flowtable.sh [$series] with the module attached: passes its $(wc -l <"$tmp/module.cmp") subtests ($timing_subtests aside; no stock run needed)" \
		module_passes
else
	check "nft_flowtable.sh [$series] with the stock flowtable alone: passes ($timing_subtests aside)" \
		stock_passes
	if ! diff -u "$tmp/stock.cmp" "$tmp/module.cmp" >"$tmp/diff"; then
		sed 's/^/INFO: /' "$tmp/diff"
	fi
	check "nft_flowtable.sh [$series] with the module attached: the same $(wc -l <"$tmp/stock.cmp") verdicts as stock ($timing_subtests aside)" \
		cmp -s "$tmp/stock.cmp" "$tmp/module.cmp"
	check "nft_flowtable.sh [$series] with the module attached: exits as stock (where $timing_subtests went alike)" \
		same_as_stock
fi
check "nft_flowtable.sh [$series]: no transfer in any run arrived whole with other bytes" \
	test ! -s "$tmp/corrupted"
sed 's/^/INFO: corrupted: /' "$tmp/corrupted" 2>/dev/null || true
check "nft_flowtable.sh [$series]: the module was attached and took packets (${taken:-0})" \
	test "${taken:-0}" -gt 100
check "nft_flowtable.sh [$series]: the module was attached in every module run ($attached of $module_runs)" \
	test "$attached" = "$module_runs"
if [ "$ret" != 0 ]; then
	echo "INFO: module run's output:"
	sed 's/^/INFO:   /' "$tmp/module.log" | tail -n 40
	# Last, so that a report cut to the output's tail still says which
	# verdicts of which run differed.
	for f in "$tmp"/stock*.verdicts "$tmp"/module*.verdicts; do
		grep -H '^FAIL' "$f" | sed "s|^$tmp/|INFO: failed: |" || true
	done
	[ ! -f "$tmp/diff" ] || sed 's/^/INFO: stock vs module: /' "$tmp/diff"
fi
exit "$ret"
