package localserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// zookeeperHint tells the user how to get ZooKeeper, which the cluster
// tests need.
const zookeeperHint = "install it with `make deps` (Debian, as root: apt-get install --no-install-recommends zookeeper; it needs a Java runtime)"

// zookeeperJars are where Debian's zookeeper package puts its jar; its
// manifest names the libraries it needs.
var zookeeperJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/zookeeper/zookeeper.jar"}

// StartZooKeeper starts a private standalone ZooKeeper on a free loopback
// port, for the ClickHouse cluster tests (replicated tables and ON CLUSTER
// DDL coordinate through it).
func StartZooKeeper(ctx context.Context) (*Server, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("ZooKeeper: java not found; %s", zookeeperHint)
	}
	jar := ""
	for _, p := range zookeeperJars {
		if _, err := os.Stat(p); err == nil {
			jar = p
			break
		}
	}
	if jar == "" {
		return nil, fmt.Errorf("ZooKeeper: %s not found; %s", zookeeperJars[0], zookeeperHint)
	}
	return startWithRetry(ctx, func(ctx context.Context) (*Server, error, bool) {
		dir, err := os.MkdirTemp("", "binlog2ch-zookeeper-")
		if err != nil {
			return nil, fmt.Errorf("ZooKeeper: temp dir: %w", err), false
		}
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err, false
		}
		s := &Server{Endpoint: Endpoint{Host: "127.0.0.1", Port: port}, Dir: dir, name: "ZooKeeper",
			logPath: filepath.Join(dir, "zookeeper.out")}
		cfg := fmt.Sprintf("tickTime=500\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n", dir, port)
		cfgPath := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("ZooKeeper: write config: %w", err), false
		}
		// Standalone, small heap: the tests need one node and little data.
		start := func(ctx context.Context) error {
			cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-cp", jar,
				"-Dzookeeper.log.dir="+dir, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
			cmd.Dir = dir
			if err := s.launch(cmd); err != nil {
				return err
			}
			return s.waitReady(ctx, 60*time.Second, s.pingZooKeeper)
		}
		s.restart = start
		if err := start(ctx); err != nil {
			retry := strings.Contains(s.logTail(), "Address already in use")
			_ = s.Stop()
			return nil, err, retry
		}
		return s, nil, false
	})
}

// pingZooKeeper asks the four-letter command srvr, which answers once the
// server serves clients.
func (s *Server) pingZooKeeper(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("srvr")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "Zookeeper version") {
		return fmt.Errorf("srvr answered %q (%v)", line, err)
	}
	return nil
}

// ClusterName is the cluster StartCluster defines in remote_servers.
const ClusterName = "binlog2ch"

// Cluster is a private ZooKeeper and ClickHouse servers forming one
// cluster: Shards[i][j] is replica j of shard i.
type Cluster struct {
	Name      string
	ZooKeeper *Server
	Shards    [][]*Server
}

// Servers are all ClickHouse servers, shard by shard.
func (c *Cluster) Servers() []*Server {
	var all []*Server
	for _, sh := range c.Shards {
		all = append(all, sh...)
	}
	return all
}

// Stop stops every server.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	return errors.Join(c.stopMembers(), c.ZooKeeper.Stop())
}

// stopMembers stops the ClickHouse servers, leaving the ZooKeeper.
func (c *Cluster) stopMembers() error {
	var errs []error
	for _, s := range c.Servers() {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}

// StartCluster starts a ZooKeeper and shards x replicas ClickHouse servers
// on loopback ports, each configured with the cluster ClusterName in
// remote_servers (internal_replication: a replicated table copies rows
// between replicas itself), its macros {shard} and {replica}, the
// ZooKeeper, and the distributed DDL queue for ON CLUSTER. On error
// nothing is left running.
func StartCluster(ctx context.Context, shards, replicas int) (*Cluster, error) {
	return StartClusterWith(ctx, shards, replicas, "")
}

// NoMerges is configuration for StartClusterWith under which no server
// merges parts (none is small enough to merge): a test counts the rows its
// inserts left, which merges of a ReplacingMergeTree would collapse.
const NoMerges = "<merge_tree><max_bytes_to_merge_at_max_space_in_pool>1</max_bytes_to_merge_at_max_space_in_pool></merge_tree>\n"

// StartClusterWith is StartCluster with more configuration elements for
// every server (such as NoMerges).
func StartClusterWith(ctx context.Context, shards, replicas int, config string) (*Cluster, error) {
	bin, err := findBinary("clickhouse-server")
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: %w", err)
	}
	zk, err := StartZooKeeper(ctx)
	if err != nil {
		return nil, err
	}
	// Every member's ports go into every member's remote_servers, so they
	// are chosen before any server starts. Another process may take one
	// meanwhile: then every member is stopped and the cluster started
	// again on fresh ports, up to three times, as single servers retry.
	var c *Cluster
	for attempt := 0; ; attempt++ {
		var retry bool
		c, retry, err = startMembers(ctx, bin, zk, shards, replicas, config)
		if err == nil {
			break
		}
		if !retry || attempt == 2 || ctx.Err() != nil {
			_ = zk.Stop()
			return nil, err
		}
	}
	// Answering pings is not enough: ON CLUSTER DDL sent before a server's
	// ZooKeeper session is up was seen to drop the connection under load.
	for _, shard := range c.Shards {
		for _, s := range shard {
			if err := s.waitZooKeeper(ctx); err != nil {
				_ = c.Stop()
				return nil, err
			}
		}
	}
	return c, nil
}

// waitZooKeeper waits until the server reads ZooKeeper (its session is up).
func (s *Server) waitZooKeeper(ctx context.Context) error {
	q := url.Values{"query": {"SELECT count() FROM system.zookeeper WHERE path = '/'"}}
	u := "http://" + net.JoinHostPort(s.Host, strconv.Itoa(s.HTTPPort)) + "/?" + q.Encode()
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: no ZooKeeper session within a minute: %w", s.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startMembers starts the cluster's ClickHouse servers against zk; on
// error none is left running, and retry says a member could not bind a
// port chosen for it.
func startMembers(ctx context.Context, bin string, zk *Server, shards, replicas int, config string) (*Cluster, bool, error) {
	c := &Cluster{Name: ClusterName, ZooKeeper: zk}
	ports := make([][]int, shards)
	var remote strings.Builder
	fmt.Fprintf(&remote, "<remote_servers><%s>\n", ClusterName)
	for i := range ports {
		remote.WriteString("<shard><internal_replication>true</internal_replication>\n")
		for j := 0; j < replicas; j++ {
			p, err := freePort()
			if err != nil {
				return nil, false, err
			}
			ports[i] = append(ports[i], p)
			fmt.Fprintf(&remote, "<replica><host>127.0.0.1</host><port>%d</port></replica>\n", p)
		}
		remote.WriteString("</shard>\n")
	}
	fmt.Fprintf(&remote, "</%s></remote_servers>\n", ClusterName)
	c.Shards = make([][]*Server, shards)
	for i := range c.Shards {
		c.Shards[i] = make([]*Server, replicas)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		retry bool // a member failed to bind a port
	)
	for i := 0; i < shards; i++ {
		for j := 0; j < replicas; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				inter, err := freePort()
				if err == nil {
					extra := remote.String() + fmt.Sprintf(`<zookeeper><node><host>127.0.0.1</host><port>%d</port></node></zookeeper>
<macros><shard>%d</shard><replica>r%d</replica></macros>
<distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
<interserver_http_host>127.0.0.1</interserver_http_host>
<interserver_http_port>%d</interserver_http_port>
`, zk.Port, i+1, j+1, inter) + config
					var s *Server
					var bind bool
					s, err, bind = startClickHouseOnce(ctx, bin, chOptions{tcp: ports[i][j], extra: extra,
						name: "ClickHouse shard " + strconv.Itoa(i+1) + " replica " + strconv.Itoa(j+1)})
					c.Shards[i][j] = s
					if bind {
						mu.Lock()
						retry = true
						mu.Unlock()
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.stopMembers()
		return nil, retry, err
	}
	return c, false, nil
}
