// Multiprocess runs a live all-reduce with one operating-system process per
// member, all on loopback: it builds the gossipreduce command, starts
// "gossipreduce server" (an embedded NATS server on a free port), then N
// "gossipreduce node" processes, and checks that every member printed the
// same result.
//
//	go run ./examples/multiprocess            # 8 members
//	go run ./examples/multiprocess -nodes 16 -sum
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"time"
)

func main() {
	nodes := flag.Int("nodes", 8, "number of member processes")
	sum := flag.Bool("sum", false, "sum instead of average")
	algo := flag.String("algo", "exchange", "algorithm (gossipreduce node --algo)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir, err := os.MkdirTemp("", "gossipreduce-example")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "gossipreduce")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/gossipreduce/gossipreduce/cmd/gossipreduce")
	build.Stderr = os.Stderr
	check(build.Run())

	// The server prints {"url": …} once it accepts clients.
	server := exec.CommandContext(ctx, bin, "server", "--port", "0", "--json")
	stdout, err := server.StdoutPipe()
	check(err)
	check(server.Start())
	defer func() { server.Process.Signal(os.Interrupt); server.Wait() }()
	var hello struct{ URL string }
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	check(err)
	check(json.Unmarshal(line, &hello))
	fmt.Printf("NATS server at %s\n", hello.URL)

	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	results := make([]map[string]any, *nodes)
	var total float64
	var wg sync.WaitGroup
	for id := range *nodes {
		x := math.Round(100e6*r.Float64()) / 1e6 // printed exactly with 6 decimals
		total += x
		value := fmt.Sprintf("%.6f", x)
		args := []string{"node", "--nats", hello.URL, "--group", "example", "--id", fmt.Sprint(id),
			"--nodes", fmt.Sprint(*nodes), "--value", value, "--algo", *algo, "--json"}
		if *sum {
			args = append(args, "--sum")
		}
		fmt.Printf("member %d: value %s\n", id, value)
		wg.Go(func() {
			var out, errb bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				log.Fatalf("member %d: %v: %s", id, err, errb.String())
			}
			check(json.Unmarshal(out.Bytes(), &results[id]))
		})
	}
	wg.Wait()
	for id, res := range results {
		fmt.Printf("member %d (its own process): %s = %v, %v live, %v messages\n", id, res["op"], res["result"], res["live"], res["messages"])
		if !reflect.DeepEqual(res["result"], results[0]["result"]) {
			log.Fatalf("member %d disagrees with member 0", id)
		}
	}
	exact := total
	if !*sum {
		exact /= float64(*nodes)
	}
	got := results[0]["result"].([]any)[0].(float64)
	fmt.Printf("all %d processes returned the same result; exact %.9f, relative error %.2g\n", *nodes, exact, math.Abs(got-exact)/math.Abs(exact))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
