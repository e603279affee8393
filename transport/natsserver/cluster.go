package natsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ClusterOptions configure [StartCluster].
type ClusterOptions struct {
	// Server configures every server of the cluster as for
	// [StartEmbedded]: the clients' authentication and TLS, the logger and
	// the start timeout. Port must be zero (each server gets a free one)
	// and InProcess false (routes need listeners).
	Server EmbeddedOptions

	// Name is the cluster's name; empty means "gossipreduce".
	Name string
}

// Cluster is a set of NATS servers in this process, routed to one another
// on loopback, for tests of failover: a client given every URL keeps
// working when the server it is connected to goes away. Each server
// listens on 127.0.0.1 with its own client and route ports. It is safe for
// concurrent use.
type Cluster struct {
	opts ClusterOptions
	name string

	mu      sync.Mutex
	servers []*Server
	client  []int // client port of each server, kept across restarts
	route   []int // route port of each server, kept across restarts
}

// StartCluster starts n servers routed together and waits until every one
// is routed to all the others. Server 0 starts first; each later server
// has routes to every server started before it (so that the cluster stays
// connected whichever server goes down).
func StartCluster(ctx context.Context, n int, opts ClusterOptions) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("natsserver: %w: a cluster of %d servers", gossip.ErrInvalidConfig, n)
	}
	if opts.Server.Port != 0 || opts.Server.InProcess {
		return nil, fmt.Errorf("natsserver: %w: cluster servers pick their own ports and need listeners (Port 0, InProcess false)", gossip.ErrInvalidConfig)
	}
	c := &Cluster{opts: opts, name: opts.Name, servers: make([]*Server, n), client: make([]int, n), route: make([]int, n)}
	if c.name == "" {
		c.name = "gossipreduce"
	}
	for i := range n {
		s, err := c.start(ctx, i, server.RANDOM_PORT, server.RANDOM_PORT)
		if err != nil {
			c.Shutdown()
			return nil, err
		}
		c.mu.Lock()
		c.servers[i] = s
		c.client[i] = s.ns.Addr().(*net.TCPAddr).Port
		c.route[i] = s.ns.ClusterAddr().Port
		c.mu.Unlock()
	}
	if err := c.waitRouted(ctx); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// start starts server i on the given ports, with routes to every other
// running server.
func (c *Cluster) start(ctx context.Context, i, clientPort, routePort int) (*Server, error) {
	sopts, err := serverOptions(c.opts.Server)
	if err != nil {
		return nil, err
	}
	sopts.ServerName = "gossipreduce-" + strconv.Itoa(i)
	sopts.Port = clientPort
	sopts.Cluster = server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: routePort}
	c.mu.Lock()
	for j, s := range c.servers {
		if j != i && s != nil && s.ns.Running() {
			sopts.Routes = append(sopts.Routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.route[j]))})
		}
	}
	c.mu.Unlock()
	s, err := startServer(ctx, sopts, c.opts.Server)
	if err != nil {
		return nil, fmt.Errorf("natsserver: cluster server %d: %w", i, err)
	}
	return s, nil
}

// Size returns the number of servers, running or not.
func (c *Cluster) Size() int { return len(c.servers) }

// URLs returns the client URL of every server, in order, whether it runs or
// not: give them all to [transport.Connect].
func (c *Cluster) URLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	urls := make([]string, len(c.client))
	for i, p := range c.client {
		urls[i] = "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return urls
}

// Server returns server i as it currently runs (or last ran): shut it down
// with its Shutdown method, start it again with [Cluster.Restart].
func (c *Cluster) Server(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Restart starts server i again, after its Shutdown, on the same client and
// route ports and with routes to every running server, and waits until it
// is routed to all of them. Clients that lost it reconnect to it like to
// any other server of the cluster. Restarting a running server fails.
func (c *Cluster) Restart(ctx context.Context, i int) (*Server, error) {
	if i < 0 || i >= len(c.servers) {
		return nil, fmt.Errorf("natsserver: %w: no server %d in a cluster of %d", gossip.ErrInvalidConfig, i, len(c.servers))
	}
	c.mu.Lock()
	old, clientPort, routePort := c.servers[i], c.client[i], c.route[i]
	c.mu.Unlock()
	if old.ns.Running() {
		return nil, fmt.Errorf("natsserver: %w: cluster server %d is running", gossip.ErrInvalidConfig, i)
	}
	old.Shutdown() // waits for a shutdown under way to finish, freeing the ports
	s, err := c.start(ctx, i, clientPort, routePort)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
	if err := c.waitRouted(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// waitRouted waits until every running server has a route to every other
// running one.
func (c *Cluster) waitRouted(ctx context.Context) error {
	deadline := time.Now().Add(c.opts.Server.startTimeout())
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		var running []*Server
		for _, s := range c.servers {
			if s != nil && s.ns.Running() {
				running = append(running, s)
			}
		}
		c.mu.Unlock()
		routed := true
		for _, s := range running {
			if s.ns.NumRemotes() != len(running)-1 {
				routed = false
			}
		}
		if routed {
			return nil
		}
		var err error
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
			if time.Now().After(deadline) {
				err = errors.New("servers not routed to one another before the start timeout")
			}
		}
		if err != nil {
			return fmt.Errorf("natsserver: cluster: %w", err)
		}
	}
}

// Shutdown stops every server and waits until they have stopped.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	servers := append([]*Server(nil), c.servers...)
	c.mu.Unlock()
	for _, s := range servers {
		if s != nil {
			s.Shutdown()
		}
	}
}
