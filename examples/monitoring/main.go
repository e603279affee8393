// Monitoring runs a fleet of service processes on loopback. Each one keeps
// its own metrics (requests served, latency, up) and, through a
// gossipreduce Monitor over an elastic group (members by name, no fixed
// size), the cluster-wide aggregates of them, and serves both on an HTTP
// /metrics endpoint in the Prometheus format. Any instance can be scraped:
// they all report the same cluster-wide figures, over whoever is in the
// fleet now, and no instance is a coordinator.
//
//	go run ./examples/monitoring                 # 4 instances until Ctrl-C; prints curl commands
//	go run ./examples/monitoring -demo           # scales 4 → 16 → 8 (half of the stops kill -9), checks every scrape, exits
//	go run ./examples/monitoring -demo -scale 3,6,2
//
// Each instance is this same program started with -name (which is also
// how to run one by hand against any NATS server).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// The instance's metrics, named as Prometheus names them: units in the
// name, _total for a counter. The counter, up and the instance's number
// are whole numbers, so the group sums them exactly
// (MonitorConfig.Integers); the demo checks every scrape against the sum
// of the numbers of the instances the aggregate names.
var (
	metricNames = []string{"requests_total", "latency_seconds", "up", "instance_number"}
	wholeNames  = []string{"requests_total", "up", "instance_number"}
)

func main() {
	name := flag.String("name", "", "run as the instance of this name, \"i-<number>\" (started by the fleet; empty: start a fleet)")
	natsURL := flag.String("nats", "", "NATS server URL (instance mode)")
	addr := flag.String("http", "", "HTTP address of /metrics (instance mode)")
	interval := flag.Duration("interval", time.Second, "how often the fleet aggregates")
	scale := flag.String("scale", "4,16,8", "fleet mode: the fleet's sizes, one after the other (without -demo, the first)")
	demo := flag.Bool("demo", false, "fleet mode: go through -scale, scraping every instance and checking every aggregate, then exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *name != "" {
		check(runInstance(ctx, *name, *natsURL, *addr, *interval))
		return
	}
	var sizes []int
	for _, f := range strings.Split(*scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			check(fmt.Errorf("-scale %q: want sizes from 1 to 64", *scale))
		}
		sizes = append(sizes, n)
	}
	check(runFleet(ctx, sizes, *interval, *demo))
}

// instanceNumber is k of the name "i-k".
func instanceNumber(name string) (int, error) {
	k, err := strconv.Atoi(strings.TrimPrefix(name, "i-"))
	if err != nil || !strings.HasPrefix(name, "i-") || k < 0 {
		return 0, fmt.Errorf("instance name %q: want i-<number>", name)
	}
	return k, nil
}

// runInstance is one service instance.
func runInstance(ctx context.Context, name, natsURL, addr string, interval time.Duration) error {
	k, err := instanceNumber(name)
	if err != nil {
		return err
	}
	tr, err := transport.Connect(ctx, []string{natsURL}, transport.NATSOptions{Name: "monitoring-" + name})
	if err != nil {
		return err
	}
	defer tr.Close()
	mon, err := aggregate.StartMonitor(ctx, tr, aggregate.MonitorConfig{
		Config:   aggregate.Config{Group: "monitoring-example", Name: name, Suspect: 500 * time.Millisecond},
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
	mon.Set("instance_number", float64(k))
	go func() {
		r := rand.New(rand.NewPCG(uint64(k), uint64(time.Now().UnixNano())))
		for ctx.Err() == nil {
			mon.Add("requests_total", float64(1+r.IntN(5)))
			mon.Set("latency_seconds", (10+float64(k%10)+r.NormFloat64())/1000)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{mon: mon})
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
}

var (
	descLocal = map[string]*prometheus.Desc{
		"requests_total":  prometheus.NewDesc("example_requests_total", "Requests this instance served.", nil, nil),
		"latency_seconds": prometheus.NewDesc("example_latency_seconds", "This instance's latest request latency.", nil, nil),
		"up":              prometheus.NewDesc("example_up", "1 while this instance serves.", nil, nil),
		"instance_number": prometheus.NewDesc("example_instance_number", "The number k of this instance's name, i-k.", nil, nil),
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
	descMembers = prometheus.NewDesc("gossipreduce_cluster_members", "Instances in the view the latest aggregation ran over.", nil, nil)
	descView    = prometheus.NewDesc("gossipreduce_cluster_view", "Number of the view (the agreed membership) the latest aggregation ran over.", nil, nil)
	descCovered = prometheus.NewDesc("gossipreduce_cluster_covered", "1 for each instance of the view whose metrics the latest aggregation covers, 0 for one it left out.", []string{"instance"}, nil)
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
	for _, d := range []*prometheus.Desc{descLive, descMembers, descView, descCovered, descDue, descAge} {
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
	ch <- prometheus.MustNewConstMetric(descView, prometheus.GaugeValue, float64(s.View))
	for i, name := range s.Names {
		v := 1.0
		if slices.Contains(s.Absent, gossipID(i)) {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(descCovered, prometheus.GaugeValue, v, name)
	}
	ch <- prometheus.MustNewConstMetric(descDue, prometheus.GaugeValue, float64(s.Epoch)/1000)
	ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, s.Age(time.Now()).Seconds())
}

// instance is one process of the fleet.
type instance struct {
	name    string
	url     string
	cmd     *exec.Cmd
	started time.Time
	stopped time.Time // zero while it runs
	in, out time.Time // first scrape that covered it; first after its stop that no instance covered it
}

// runFleet starts an embedded NATS server and the fleet, and with demo
// goes through sizes, scraping every instance every 100 ms and checking
// every aggregate against the exact sum of the instances it names.
func runFleet(ctx context.Context, sizes []int, interval time.Duration, demo bool) error {
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f := &fleet{self: self, nats: srv.ClientURL(), interval: interval, t0: time.Now()}
	defer f.stopAll()
	if demo {
		go f.watch(ctx)
	}
	if err := f.scaleTo(ctx, sizes[0]); err != nil {
		return err
	}
	fmt.Printf("NATS at %s; %d instances, aggregating every %v. Scrape any of them:\n", srv.ClientURL(), sizes[0], interval)
	for _, in := range f.running() {
		fmt.Printf("  curl -s http://%s/metrics | grep gossipreduce_cluster\n", in.url)
	}
	if !demo {
		<-ctx.Done()
		return nil
	}
	for k, n := range sizes {
		if k > 0 {
			fmt.Printf("\n%6.1fs  scaling to %d\n", f.since(time.Now()), n)
			if err := f.scaleTo(ctx, n); err != nil {
				return err
			}
		}
		if err := f.settle(ctx, n); err != nil {
			return err
		}
		fmt.Printf("%6.1fs  every one of the %d instances reports %d live\n", f.since(time.Now()), n, n)
		scrape(f.running()[0].url)
		time.Sleep(3 * interval) // a few aggregates at this size, each checked
	}
	f.report()
	if f.wrong > 0 {
		return fmt.Errorf("%d scrapes disagreed with the exact sums of the instances they name", f.wrong)
	}
	return nil
}

// fleet is the demo's bookkeeping.
type fleet struct {
	self, nats string
	interval   time.Duration
	t0         time.Time

	mu       sync.Mutex
	all      []*instance
	next     int
	scrapes  int // aggregates checked
	wrong    int
	views    map[float64]bool
	lastLive map[string]float64 // per running instance, its latest live count
	kills    int
}

func (f *fleet) since(t time.Time) float64 { return t.Sub(f.t0).Seconds() }

func (f *fleet) running() []*instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*instance
	for _, in := range f.all {
		if in.stopped.IsZero() {
			out = append(out, in)
		}
	}
	return out
}

// scaleTo starts or stops instances until n run: it stops the newest
// first, every other one with SIGKILL (no goodbye: the group notices its
// silence) and the rest with SIGINT (it leaves the group).
func (f *fleet) scaleTo(ctx context.Context, n int) error {
	run := f.running()
	for len(run) < n {
		f.mu.Lock()
		f.next++
		name := fmt.Sprintf("i-%d", f.next)
		url := fmt.Sprintf("127.0.0.1:%d", 19100+f.next)
		f.mu.Unlock()
		cmd := exec.CommandContext(ctx, f.self, "-name", name, "-nats", f.nats, "-http", url, "-interval", f.interval.String())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		in := &instance{name: name, url: url, cmd: cmd, started: time.Now()}
		f.mu.Lock()
		f.all = append(f.all, in)
		f.mu.Unlock()
		run = append(run, in)
	}
	for i := len(run) - 1; i >= n; i-- {
		in := run[i]
		sig, how := os.Interrupt, "stopped"
		if i%2 == 0 {
			sig, how = syscall.SIGKILL, "killed (-9)"
			f.kills++
		}
		in.cmd.Process.Signal(sig)
		f.mu.Lock()
		in.stopped = time.Now()
		f.mu.Unlock()
		fmt.Printf("%6.1fs  %s %s\n", f.since(in.stopped), in.name, how)
		go in.cmd.Wait()
	}
	return nil
}

// watch scrapes every running instance every 100 ms, checks each
// aggregate, and notes when instances are first covered and when a
// stopped one is covered no more.
func (f *fleet) watch(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		covered := map[string]bool{}
		live := map[string]float64{}
		for _, in := range f.running() {
			m, err := metrics(in.url)
			if err != nil || m.view == 0 {
				continue
			}
			live[in.name] = m.live
			f.mu.Lock()
			f.scrapes++
			if f.views == nil {
				f.views = map[float64]bool{}
			}
			f.views[m.view] = true
			want := 0.0
			n := 0.0
			for name, c := range m.covered {
				if c {
					k, _ := instanceNumber(name)
					want += float64(k)
					n++
					covered[name] = true
				}
			}
			if m.sums["instance_number"] != want || m.sums["up"] != n || m.live != n {
				f.wrong++
				fmt.Printf("%6.1fs  WRONG at %s: view %v, live %v, sum(up) %v, sum(instance_number) %v, exact %v\n",
					f.since(time.Now()), in.name, m.view, m.live, m.sums["up"], m.sums["instance_number"], want)
			}
			f.mu.Unlock()
		}
		now := time.Now()
		f.mu.Lock()
		f.lastLive = live
		for _, in := range f.all {
			if in.in.IsZero() && covered[in.name] {
				in.in = now
			}
			if !in.stopped.IsZero() && in.out.IsZero() && !covered[in.name] {
				in.out = now
			}
		}
		f.mu.Unlock()
	}
}

// settle waits until every running instance's latest aggregate covers
// exactly the n running ones.
func (f *fleet) settle(ctx context.Context, n int) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, in := range f.running() {
			m, err := metrics(in.url)
			if err != nil || m.live != float64(n) || len(m.covered) != n {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("the fleet did not settle within 60 s")
}

func (f *fleet) report() {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Printf("\n%d scrapes checked over %d views: %d wrong; %d instances started, %d stopped (%d with kill -9)\n",
		f.scrapes, len(f.views), f.wrong, len(f.all), len(f.all)-len(f.runningLocked()), f.kills)
	fmt.Println("instance  start → first covered   stop → covered by none")
	for _, in := range f.all {
		line := fmt.Sprintf("%-8s  %5.1fs → %s", in.name, f.since(in.started), after(in.started, in.in))
		if !in.stopped.IsZero() {
			line += fmt.Sprintf("          %5.1fs → %s", f.since(in.stopped), after(in.stopped, in.out))
		}
		fmt.Println(line)
	}
}

// after prints how long after from to came ("-": not seen).
func after(from, to time.Time) string {
	if to.IsZero() {
		return "    -"
	}
	return fmt.Sprintf("%5.2fs", to.Sub(from).Seconds())
}

func (f *fleet) runningLocked() []*instance {
	var out []*instance
	for _, in := range f.all {
		if in.stopped.IsZero() {
			out = append(out, in)
		}
	}
	return out
}

func (f *fleet) stopAll() {
	for _, in := range f.running() {
		in.cmd.Process.Signal(os.Interrupt)
		in.cmd.Wait()
	}
}

// scraped is what the demo reads from an instance's /metrics.
type scraped struct {
	live, view float64
	sums       map[string]float64
	covered    map[string]bool
}

// metrics scrapes an instance.
func metrics(url string) (scraped, error) {
	m := scraped{sums: map[string]float64{}, covered: map[string]bool{}}
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + url + "/metrics")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		line := sc.Text()
		key, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch {
		case key == "gossipreduce_cluster_live_instances":
			m.live = v
		case key == "gossipreduce_cluster_view":
			m.view = v
		case strings.HasPrefix(key, `gossipreduce_cluster_sum{metric="`):
			m.sums[strings.TrimSuffix(strings.TrimPrefix(key, `gossipreduce_cluster_sum{metric="`), `"}`)] = v
		case strings.HasPrefix(key, `gossipreduce_cluster_covered{instance="`):
			m.covered[strings.TrimSuffix(strings.TrimPrefix(key, `gossipreduce_cluster_covered{instance="`), `"}`)] = v == 1
		}
	}
	return m, sc.Err()
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
		if strings.HasPrefix(line, "gossipreduce_cluster") && !strings.HasPrefix(line, "gossipreduce_cluster_covered") &&
			(strings.Contains(line, "sum{") || !strings.Contains(line, "{")) {
			fmt.Println("  ", line)
		}
	}
}

func gossipID(i int) gossip.NodeID { return gossip.NodeID(i) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
