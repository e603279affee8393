package topology_test

import (
	"errors"
	"fmt"

	"github.com/gossipreduce/gossipreduce/topology"
)

func ExampleParse() {
	g, err := topology.Parse("torus", 32)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Name(), g.Len(), topology.Neighbors(g, 0))

	g, _ = topology.Parse("torus:8x8", 0) // n taken from the sides
	fmt.Println(g.Name(), g.Len())

	_, err = topology.Parse("hypercube", 100)
	fmt.Println(err)

	_, err = topology.Parse("mesh", 64)
	fmt.Println(errors.Is(err, topology.ErrUnknownTopology))
	// Output:
	// torus:2x4x4 32 [1 2 6 8 24]
	// torus:8x8 64
	// topology: hypercube needs a power-of-two number of nodes, got 100 (nearest: 64 or 128): invalid configuration
	// true
}

func ExampleSpectrum() {
	g, _ := topology.Hypercube(64)
	num, err := topology.Spectrum(g)
	if err != nil {
		panic(err)
	}
	cf, _ := topology.ClosedForm(g)
	fmt.Printf("numeric     λ2 = %.12f, gap = %.12f\n", num.Lambda2, num.Gap)
	fmt.Printf("closed form λ2 = %.12f, gap = %.12f\n", cf.Lambda2, cf.Gap)

	d, _ := topology.DirectedHypercube(64)
	dir, _ := topology.Spectrum(d)
	fmt.Printf("dhypercube  λ2 = %.12f, strongly connected: %v\n", dir.Lambda2, topology.StronglyConnected(d))
	// Output:
	// numeric     λ2 = 0.833333333333, gap = 0.166666666667
	// closed form λ2 = 0.833333333333, gap = 0.166666666667
	// dhypercube  λ2 = 0.500000000000, strongly connected: false
}

func ExampleClosedForm() {
	for _, spec := range []string{"complete", "hypercube", "torus", "ring", "bmg"} {
		g, _ := topology.Parse(spec, 1<<15)
		s, ok := topology.ClosedForm(g)
		fmt.Printf("%-18s ok=%-5v gap=%.6g\n", g.Name(), ok, s.Gap)
	}
	// Output:
	// complete           ok=true  gap=0.500015
	// hypercube          ok=true  gap=0.0666667
	// torus:32x32x32     ok=true  gap=0.00320245
	// ring               ok=true  gap=9.19179e-09
	// bmg                ok=false gap=0
}

func ExamplePredictedRounds() {
	for _, spec := range []string{"complete", "hypercube", "torus"} {
		g, _ := topology.Parse(spec, 512)
		r, _ := topology.PredictedRounds(g, 1e-14)
		fmt.Printf("%-12s %6.0f\n", g.Name(), r)
	}
	// Output:
	// complete         77
	// hypercube       346
	// torus:8x8x8     788
}

func ExampleModel() {
	g, _ := topology.Hypercube(1024)
	for _, kind := range topology.ModelKinds {
		ours, _ := topology.Model(kind, g)
		thesis, ok := topology.ThesisModel(kind, g)
		fmt.Printf("%-18s ours %.1f", kind, ours)
		if ok {
			fmt.Printf(", thesis %.1f", thesis)
		}
		fmt.Println()
	}
	// Output:
	// sync-rounds        ours 233.9, thesis 223.6
	// async-msgs         ours 373.5, thesis 372.1
	// async-first-msgs   ours 250.9, thesis 253.4
	// sync-jacobi-rounds ours 296.0
}

func ExampleNewPhysicalTorus() {
	overlay, _ := topology.Hypercube(512)
	p, _ := topology.NewPhysicalTorus(overlay, 1)
	fmt.Println(p.Sides(), p.Diameter(), p.Identity())

	near, _ := topology.TorusN(512)
	q, _ := topology.NewPhysicalTorus(near, 1)
	fmt.Println(q.Identity(), q.Hops(0, near.Neighbor(0, 3)))
	// Output:
	// [8 8 8] 12 false
	// true 1
}

func ExampleTorusN() {
	for _, n := range []int{27, 32, 1000, 1024, 97} {
		g, _ := topology.TorusN(n)
		fmt.Println(n, g.Name(), g.Degree(0))
	}
	// Output:
	// 27 torus:3x3x3 6
	// 32 torus:2x4x4 5
	// 1000 torus:10x10x10 6
	// 1024 torus:8x8x16 6
	// 97 torus:1x1x97 2
}
