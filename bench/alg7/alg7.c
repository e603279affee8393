/*
 * alg7.c: a plain single-threaded C loop of Algorithm 7 (thesis, appendix
 * A.1), the synchronous Push-Sum simulator, on a 2^d-node hypercube. It is
 * the baseline the Go simulator (sim.RunSync) is measured against; see
 * run.sh.
 *
 * usage: alg7 [d [eps [seed [max-rounds]]]]   defaults: 20 1e-13 1 100000
 *
 * Inputs x_i are uniform on [0, 1), weights w_i = 1. The numbers come from
 * the same counter-based streams as sim.RunSync (stream 0 for the inputs,
 * stream r for the neighbour choices of round r, keyed by a splitmix64
 * finaliser; value i of a stream is wyrand's output for the state
 * key + (i+1) WY_INC; neighbour k of node i is i XOR 2^k with
 * k = floor(h * d / 2^64)), so for the same seed this
 * program and RunSync with Sequential: true make the same choices and should
 * report the same number of rounds.
 *
 * Stopping rule, as in RunSync's Sequential mode: after a sweep, the
 * residual max_i |y_i - alpha| / |alpha| with y_i taken at node i's turn
 * (Algorithm 7, lines 8 and 10); when it is <= eps, one more pass checks the
 * state at the end of the sweep, and the loop stops if that is <= eps too.
 *
 * Prints one line of key=value pairs: rounds, seconds (wall clock of
 * allocation, inputs and rounds), CPU seconds of the process, the final max
 * relative error, peak RSS.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define GOLDEN 0x9e3779b97f4a7c15ULL
#define SEED_SALT 0x5eed5eed5eed5eedULL
#define WY_INC 0xa0761d6478bd642fULL
#define WY_XOR 0xe7037ed1a0b428dbULL

static inline uint64_t mix64(uint64_t z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* value number i of the stream with key k: wyrand's output for the state
 * k + (i+1) WY_INC */
static inline uint64_t draw(uint64_t k, uint64_t i) {
	uint64_t s = k + WY_INC * (i + 1);
	unsigned __int128 p = (unsigned __int128)s * (s ^ WY_XOR);
	return (uint64_t)(p >> 64) ^ (uint64_t)p;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* largest |x_i/w_i - alpha| over the state */
static double measure(const double *xw, uint64_t n, double alpha) {
	double m = 0;
	for (uint64_t i = 0; i < n; i++) {
		double e = fabs(xw[2 * i] / xw[2 * i + 1] - alpha);
		if (e != e) e = INFINITY;
		if (e > m) m = e;
	}
	return m;
}

int main(int argc, char **argv) {
	int d = argc > 1 ? atoi(argv[1]) : 20;
	double eps = argc > 2 ? atof(argv[2]) : 1e-13;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	long max_rounds = argc > 4 ? atol(argv[4]) : 100000;
	if (d < 1 || d > 32 || !(eps > 0 && eps < 1) || max_rounds < 0) {
		fprintf(stderr, "usage: alg7 [d (1..32) [eps (0<eps<1) [seed [max-rounds]]]]\n");
		return 2;
	}
	uint64_t n = 1ULL << d;
	double t0 = now();

	/* interleaved (x, w) pairs, 16 bytes per node */
	double *xw = malloc(2 * n * sizeof(double));
	if (!xw) {
		perror("malloc");
		return 1;
	}
	uint64_t base = mix64(seed ^ SEED_SALT);
	uint64_t k0 = mix64(base); /* stream 0: inputs */
	/* x_i = m_i 2^-53 with m_i < 2^53: sum the m_i exactly, then alpha =
	 * sum 2^-53 / 2^d is the exact mean rounded once (as in sim.RunSync) */
	unsigned __int128 sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t m = draw(k0, i) >> 11;
		xw[2 * i] = (double)m * 0x1p-53;
		xw[2 * i + 1] = 1;
		sum += m;
	}
	double alpha = ldexp((double)sum, -53 - d);
	double scale = alpha != 0 ? fabs(alpha) : 1;

	long rounds = 0;
	double residual = measure(xw, n, alpha) / scale;
	while (residual > eps && rounds < max_rounds) {
		rounds++;
		uint64_t rk = mix64(base + GOLDEN * (uint64_t)rounds);
		double m = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t k = (uint64_t)(((unsigned __int128)draw(rk, i) * (uint64_t)d) >> 64);
			uint64_t j = i ^ (1ULL << k);
			double x = xw[2 * i] * 0.5, w = xw[2 * i + 1] * 0.5;
			xw[2 * i] = x;
			xw[2 * i + 1] = w;
			xw[2 * j] += x;
			xw[2 * j + 1] += w;
			double e = fabs(xw[2 * i] / xw[2 * i + 1] - alpha);
			if (e != e) e = INFINITY;
			if (e > m) m = e;
		}
		residual = m / scale;
		if (residual <= eps) residual = measure(xw, n, alpha) / scale;
	}
	double final = measure(xw, n, alpha) / scale;
	double secs = now() - t0;

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
	             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
	printf("impl=c-alg7 d=%d nodes=%llu eps=%g seed=%llu rounds=%ld converged=%d "
	       "max_rel_error=%.3e seconds=%.3f cpu_seconds=%.3f maxrss_kib=%ld "
	       "rss_bytes_per_node=%.1f\n",
	       d, (unsigned long long)n, eps, (unsigned long long)seed, rounds, final <= eps, final, secs,
	       cpu, ru.ru_maxrss, 1024.0 * (double)ru.ru_maxrss / (double)n);
	free(xw);
	return 0;
}
