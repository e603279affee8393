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
# alternation n times and the table keeps each implementation's fastest
# run; on a shared machine, say so when quoting the figures.
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
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); fastest of $reps run(s) each"
awk -v reps="$reps" '
	# C: key=value pairs
	FILENAME ~ /c.txt$/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		name = "C Algorithm 7 (1 thread)"
		if (!(name in wall) || v["seconds"] < wall[name]) {
			wall[name] = v["seconds"]; cpu[name] = v["cpu_seconds"]; rounds[name] = v["rounds"]
			state[name] = 16; heap[name] = "-"; rss[name] = v["rss_bytes_per_node"]
		}
		order[name] = 0
		next
	}
	# Go: "BenchmarkSyncHypercube20/mode-P  1  ns ns/op  value unit ..."
	{
		name = $1; sub(/^BenchmarkSyncHypercube20\//, "Go ", name); sub(/-[0-9]+$/, "", name)
		delete m
		for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
		if (!(name in wall) || m["s/run"] < wall[name]) {
			wall[name] = m["s/run"]; cpu[name] = m["cpu-s/run"]; rounds[name] = m["rounds"]
			state[name] = m["state-B/node"]; heap[name] = m["heap-B/node"]; rss[name] = m["rss-B/node"]
		}
		if (!(name in order)) order[name] = ++n
	}
	END {
		c = "C Algorithm 7 (1 thread)"
		printf "| %-26s | %6s | %8s | %8s | %12s | %11s | %11s | %10s |\n", \
			"implementation", "rounds", "wall s", "CPU s", "state B/node", "heap B/node", "RSS B/node", "C/Go wall"
		printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------------------", "--------", "----------", \
			"----------", "--------------", "-------------", "-------------", "------------"
		for (k = 0; k <= n; k++) for (name in order) if (order[name] == k) {
			ratio = (name == c) ? "1" : sprintf("%.2f", wall[c] / wall[name])
			printf "| %-26s | %6d | %8.2f | %8.2f | %12.1f | %11s | %11.1f | %10s |\n", \
				name, rounds[name], wall[name], cpu[name], state[name], heap[name], rss[name], ratio
		}
		# Both run Algorithm 7 on the same random numbers.
		s = "Go sequential"
		printf "\nC loop and Go sequential rounds: %d and %d (%s)\n", rounds[c], rounds[s], \
			rounds[c] == rounds[s] ? "equal, as they must be" : "DIFFERENT: the two implementations disagree"
	}
' "$tmp/c.txt" "$tmp/go.txt"
