#!/usr/bin/env bash
# run.sh: the performance goal of sim.RunSync, measured on this machine in
# one session. Compiles alg7.c (a plain single-threaded C loop of the
# thesis's Algorithm 7) with gcc -O2 into a temporary directory, runs it on
# a 2^20-node hypercube to eps = 1e-13 with seed 1, then runs the Go
# benchmark BenchmarkSyncHypercube20 on the same workload, each mode in a
# process of its own (so that peak RSS belongs to one mode), and prints
# both and a table with the ratio C/Go of wall-clock seconds.
#
# A manual benchmark, not part of CI. REPS=n (default 1) repeats the whole
# alternation n times; the table gives each implementation's median and
# range, and the median over repetitions of the ratio C/Go within each,
# and a list below it every repetition's ratio. On a shared machine, say
# so when quoting the figures.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=${REPS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gcc -O2 -Wall -o "$tmp/alg7" "$here/alg7.c" -lm
(cd "$root" && go test -c -o "$tmp/sim.test" ./sim)

modes=("jacobi/workers=1" "jacobi/workers=2" "sequential")
for ((rep = 1; rep <= reps; rep++)); do
	"$tmp/alg7" 20 1e-13 1 | tee -a "$tmp/c.txt"
	for mode in "${modes[@]}"; do
		pattern="^BenchmarkSyncHypercube20\$/^${mode//\//\$/^}\$"
		"$tmp/sim.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 1x |
			grep '^Benchmark' | tee -a "$tmp/go.txt"
	done
done

echo
echo "machine: $(nproc) CPUs, load average now $(cut -d' ' -f1-3 /proc/loadavg); $reps run(s) of each, alternated"
awk '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function record(name, wallv, cpuv, r, st, hp, rs) {
		if (!(name in runs)) order[++n] = name
		k = ++runs[name]
		wall[name, k] = wallv; cpu[name, k] = cpuv; rounds[name] = r
		state[name] = st; heap[name] = hp; rss[name] = rs
	}
	# C: key=value pairs
	FILENAME ~ /c.txt$/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		record("C Algorithm 7 (1 thread)", v["seconds"], v["cpu_seconds"], v["rounds"], 16, "-", v["rss_bytes_per_node"])
		next
	}
	# Go: "BenchmarkSyncHypercube20/mode-P  1  ns ns/op  value unit ..."
	{
		name = $1; sub(/^BenchmarkSyncHypercube20\//, "Go ", name); sub(/-[0-9]+$/, "", name)
		delete m
		for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
		record(name, m["s/run"], m["cpu-s/run"], m["rounds"], m["state-B/node"], m["heap-B/node"], m["rss-B/node"])
	}
	END {
		c = order[1]
		printf "| %-24s | %6s | %-22s | %8s | %7s | %7s | %7s | %-18s |\n", "implementation", "rounds", \
			"wall s: median (range)", "CPU s", "state", "heap", "RSS", "C/Go wall: median"
		printf "| %-24s | %6s | %-22s | %8s | %7s | %7s | %7s | %-18s |\n", "", "", "", "median", \
			"B/node", "B/node", "B/node", "of per-run ratios"
		print "|--------------------------|--------|------------------------|----------|---------|---------|---------|--------------------|"
		for (o = 1; o <= n; o++) {
			name = order[o]; k = runs[name]
			lo = hi = wall[name, 1]
			for (i = 1; i <= k; i++) {
				w[i] = wall[name, i]; u[i] = cpu[name, i]; q[i] = wall[c, i] / wall[name, i]
				if (w[i] < lo) lo = w[i]; if (w[i] > hi) hi = w[i]
			}
			printf "| %-24s | %6d | %-22s | %8.2f | %7.1f | %7s | %7.1f | %-18s |\n", \
				name, rounds[name], sprintf("%.2f (%.2f-%.2f)", median(w, k), lo, hi), median(u, k), \
				state[name], heap[name], rss[name], sprintf("%.2f", median(q, k))
		}
		# Every run, not only the median: on a shared machine one slow run
		# of either side shows here.
		printf "\nC/Go wall-clock ratio of each repetition (C run and Go run of the same repetition):\n"
		for (o = 2; o <= n; o++) {
			name = order[o]; line = ""; lo = 0
			for (i = 1; i <= runs[name]; i++) {
				q[i] = wall[c, i] / wall[name, i]
				line = line sprintf(" %.2f", q[i])
				if (i == 1 || q[i] < lo) lo = q[i]
			}
			printf "  %-24s%s  (lowest %.2f: Go %s)\n", name, line, lo, (lo > 1 ? "ahead on every run" : "NOT ahead on every run")
		}
		# Both run Algorithm 7 on the same random numbers.
		s = "Go sequential"
		printf "\nC loop and Go sequential rounds: %d and %d (%s)\n", rounds[c], rounds[s], \
			rounds[c] == rounds[s] ? "equal, as they must be" : "DIFFERENT: the two implementations disagree"
	}
' "$tmp/c.txt" "$tmp/go.txt"
