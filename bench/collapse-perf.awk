#!/usr/bin/awk -f
# Minimal `perf script` -> folded stacks collapse, for bench/run.sh only: it stands in for
# the post-processing step users run after perf record (FlameGraph's stackcollapse-perf.pl)
# so that the timing includes it. Not a faithful port: no inline/srcline handling, no pid/tid
# options, no [unknown] tidying beyond what is below.
#
# Input, one record per sample, records separated by a blank line:
#   comm  pid [cpu] time: period event:       ([cpu] only with -a)
#   \taddr symbol+0xoff (dso)
#   ...                           (leaf first)
# Output: "comm;root;...;leaf count", one line per distinct stack.

function flush(   s, i) {
	if (comm == "")
		return
	s = comm
	for (i = n; i >= 1; i--)
		s = s ";" fr[i]
	count[s]++
	comm = ""
	n = 0
}

/^[ \t]*$/ { flush(); next }

/^[ \t]/ {
	# frame: address, symbol (may contain spaces, e.g. C++), then "(dso)" last
	line = $0
	sub(/^[ \t]+[0-9a-f]+[ \t]+/, "", line)
	sub(/[ \t]+\([^()]*\)$/, "", line)
	sub(/\+0x[0-9a-f]+$/, "", line)
	if (line == "")
		line = "[unknown]"
	fr[++n] = line
	next
}

{
	# header: comm (may contain spaces), then pid or pid/tid, then [cpu] (with -a) and time
	flush()
	h = $0
	sub(/[ \t]+[0-9]+(\/[0-9]+)?[ \t]+(\[[0-9]+\][ \t]+)?[0-9]+\.[0-9]+:.*$/, "", h)
	sub(/^[ \t]+/, "", h)
	gsub(/[ \t]+/, "_", h)
	comm = (h == "") ? "[unknown]" : h
	n = 0
}

END {
	flush()
	for (s in count)
		print s, count[s]
}
