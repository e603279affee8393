// Monitoring runs a small fleet of service processes on loopback. Each one
// keeps its own metrics (requests served, latency, up) and, through a
// gossipreduce Monitor, the cluster-wide aggregates of them, and serves
// both on an HTTP /metrics endpoint in the Prometheus format. Any instance
// can be scraped: they all report the same cluster-wide figures, and no
// instance is a coordinator.
//
//	go run ./examples/monitoring                # 4 instances until Ctrl-C; prints curl commands
//	go run ./examples/monitoring -demo          # scrapes two instances, stops one, scrapes again, exits
//
// Each instance is this same program started with -member (which is also
// how to run one by hand against any NATS server).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// The instance's metrics, named as Prometheus names them: units in the
// name, _total for a counter. The counter and up are whole numbers, so the
// group sums them exactly (MonitorConfig.Integers).
var (
	metricNames = []string{"requests_total", "latency_seconds", "up"}
	wholeNames  = []string{"requests_total", "up"}
)

func main() {
	member := flag.Int("member", -1, "run as this member (started by the fleet; -1: start a fleet)")
	nodes := flag.Int("nodes", 4, "fleet size")
	natsURL := flag.String("nats", "", "NATS server URL (member mode)")
	addr := flag.String("http", "", "HTTP address of /metrics (member mode)")
	interval := flag.Duration("interval", time.Second, "how often the fleet aggregates")
	demo := flag.Bool("demo", false, "fleet mode: scrape, stop a member, scrape again, then exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *member >= 0 {
		check(runMember(ctx, *member, *nodes, *natsURL, *addr, *interval))
		return
	}
	check(runFleet(ctx, *nodes, *interval, *demo))
}

// runMember is one service instance.
func runMember(ctx context.Context, id, n int, natsURL, addr string, interval time.Duration) error {
	tr, err := transport.Connect(ctx, []string{natsURL}, transport.NATSOptions{Name: fmt.Sprintf("monitoring-%d", id)})
	if err != nil {
		return err
	}
	defer tr.Close()
	mon, err := aggregate.StartMonitor(ctx, tr, aggregate.MonitorConfig{
		Config:   aggregate.Config{Group: "monitoring-example", ID: gossip.NodeID(id), Nodes: n, Suspect: 500 * time.Millisecond},
		Metrics:  metricNames,
		Integers: wholeNames,
		Interval: interval,
	})
	if err != nil {
		return err
	}
	defer mon.Close()

	// The service's own work: requests arrive, each with a latency.
	mon.Set("up", 1)
	go func() {
		r := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
		for ctx.Err() == nil {
			mon.Add("requests_total", float64(1+r.IntN(5)))
			mon.Set("latency_seconds", (10+float64(id)+r.NormFloat64())/1000)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{mon: mon, id: id})
	srv := &http.Server{Addr: addr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// collector exposes the instance's own metrics and the latest cluster-wide
// snapshot, read at scrape time so that one scrape is one consistent
// snapshot.
type collector struct {
	mon *aggregate.Monitor
	id  int
}

var (
	descLocal = map[string]*prometheus.Desc{
		"requests_total":  prometheus.NewDesc("example_requests_total", "Requests this instance served.", nil, nil),
		"latency_seconds": prometheus.NewDesc("example_latency_seconds", "This instance's latest request latency.", nil, nil),
		"up":              prometheus.NewDesc("example_up", "1 while this instance serves.", nil, nil),
	}
	// One family per statistic, labelled with the instance metric it
	// summarises; all are gauges (a cluster-wide sum of counters falls
	// when an instance leaves).
	descStat = map[string]*prometheus.Desc{
		"sum":      prometheus.NewDesc("gossipreduce_cluster_sum", "Sum of a metric over the live instances (exact for whole-valued metrics).", []string{"metric"}, nil),
		"mean":     prometheus.NewDesc("gossipreduce_cluster_mean", "Mean of a metric over the live instances.", []string{"metric"}, nil),
		"min":      prometheus.NewDesc("gossipreduce_cluster_min", "Smallest value of a metric among the live instances.", []string{"metric"}, nil),
		"max":      prometheus.NewDesc("gossipreduce_cluster_max", "Largest value of a metric among the live instances.", []string{"metric"}, nil),
		"variance": prometheus.NewDesc("gossipreduce_cluster_variance", "Population variance of a metric over the live instances.", []string{"metric"}, nil),
	}
	descLive    = prometheus.NewDesc("gossipreduce_cluster_live_instances", "Instances covered by the latest aggregation.", nil, nil)
	descMembers = prometheus.NewDesc("gossipreduce_cluster_members", "Size of the group the instances are configured for.", nil, nil)
	descDue     = prometheus.NewDesc("gossipreduce_cluster_last_aggregation_timestamp_seconds", "When the latest aggregation was due, in Unix seconds.", nil, nil)
	descAge     = prometheus.NewDesc("gossipreduce_cluster_age_seconds", "How long ago the latest aggregation was due.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descLocal {
		ch <- d
	}
	for _, d := range descStat {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{descLive, descMembers, descDue, descAge} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range metricNames {
		v, _ := c.mon.Local(name)
		typ := prometheus.GaugeValue
		if strings.HasSuffix(name, "_total") {
			typ = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(descLocal[name], typ, v)
	}
	s, ok := c.mon.Latest()
	if !ok {
		return
	}
	for _, name := range metricNames {
		m := s.Metrics[name]
		for stat, v := range map[string]float64{"sum": m.Sum, "mean": m.Mean, "min": m.Min, "max": m.Max, "variance": m.Variance} {
			ch <- prometheus.MustNewConstMetric(descStat[stat], prometheus.GaugeValue, v, name)
		}
	}
	ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(s.Live))
	ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(s.Members))
	ch <- prometheus.MustNewConstMetric(descDue, prometheus.GaugeValue, float64(s.Epoch)/1000)
	ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, s.Age(time.Now()).Seconds())
}

// runFleet starts an embedded NATS server and n instances of this program.
func runFleet(ctx context.Context, n int, interval time.Duration, demo bool) error {
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	urls := make([]string, n)
	procs := make([]*exec.Cmd, n)
	for i := range n {
		urls[i] = fmt.Sprintf("127.0.0.1:%d", 19100+i)
		cmd := exec.CommandContext(ctx, self, "-member", fmt.Sprint(i), "-nodes", fmt.Sprint(n),
			"-nats", srv.ClientURL(), "-http", urls[i], "-interval", interval.String())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		procs[i] = cmd
		defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	}
	fmt.Printf("NATS at %s; %d instances, aggregating every %v. Scrape any of them:\n", srv.ClientURL(), n, interval)
	for _, u := range urls {
		fmt.Printf("  curl -s http://%s/metrics | grep gossipreduce_cluster\n", u)
	}
	if !demo {
		<-ctx.Done()
		return nil
	}
	time.Sleep(4 * interval)
	for _, i := range []int{0, n - 1} {
		fmt.Printf("\n--- http://%s/metrics (instance %d)\n", urls[i], i)
		scrape(urls[i])
	}
	leaver := n / 2
	fmt.Printf("\n--- instance %d stops\n", leaver)
	procs[leaver].Process.Signal(os.Interrupt)
	procs[leaver].Wait()
	time.Sleep(4 * interval)
	for _, i := range []int{0, n - 1} {
		fmt.Printf("\n--- http://%s/metrics (instance %d)\n", urls[i], i)
		scrape(urls[i])
	}
	return nil
}

// scrape prints the cluster-wide lines of an instance's /metrics.
func scrape(url string) {
	resp, err := http.Get("http://" + url + "/metrics")
	if err != nil {
		fmt.Println("  ", err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "gossipreduce_cluster") && (strings.Contains(line, "sum{") || !strings.Contains(line, "{")) {
			fmt.Println("  ", line)
		}
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
