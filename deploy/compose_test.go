package deploy

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/config"
	"gopkg.in/yaml.v3"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   any               `yaml:"depends_on"`
	} `yaml:"services"`
}

// mounts maps a service's container paths to host paths (relative to
// deploy/), for bind mounts of files in the repository.
func mounts(volumes []string) map[string]string {
	m := map[string]string{}
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[0], "./") {
			m[parts[1]] = parts[0]
		}
	}
	return m
}

// TestCompose checks docker-compose.yml (which cannot run here: no Docker
// engine) holds together: the files it mounts exist, the MySQL server
// writes the binlog binlog2ch needs, binlog2ch's config loads with the
// environment the file gives it, and Prometheus scrapes binlog2ch where it
// listens, under the job name the alerts expect, with the alerts loaded.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, s := range []string{"mysql", "clickhouse", "binlog2ch", "prometheus"} {
		if _, ok := cf.Services[s]; !ok {
			t.Fatalf("docker-compose.yml: no service %s", s)
		}
	}
	for name, s := range cf.Services {
		for _, host := range mounts(s.Volumes) {
			if _, err := os.Stat(host); err != nil {
				t.Errorf("service %s mounts %s: %v", name, host, err)
			}
		}
	}

	my := cf.Services["mysql"]
	for _, want := range []string{"--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL", "--log-bin=mysql-bin"} {
		if !slices.Contains(my.Command, want) {
			t.Errorf("mysql: command lacks %s", want)
		}
	}

	b := cf.Services["binlog2ch"]
	const configPath = "/etc/binlog2ch/binlog2ch.yaml"
	if !slices.Equal(b.Command, []string{"run", "-config", configPath}) {
		t.Errorf("binlog2ch: command = %q", b.Command)
	}
	host, ok := mounts(b.Volumes)[configPath]
	if !ok {
		t.Fatalf("binlog2ch: nothing mounted at %s", configPath)
	}
	// The ${VAR}s of the config must all be in the service's environment.
	for k := range b.Environment {
		t.Setenv(k, "from-compose")
	}
	for _, k := range []string{"MYSQL_PASSWORD", "CLICKHOUSE_PASSWORD"} {
		if _, ok := b.Environment[k]; !ok {
			t.Setenv(k, "") // config.Load reports an unset one
			os.Unsetenv(k)
		}
	}
	cfg, err := config.Load(host)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	if h, _, _ := net.SplitHostPort(cfg.MySQL.Addr); h != "mysql" {
		t.Errorf("%s: mysql.addr %s is not the mysql service", host, cfg.MySQL.Addr)
	}
	if h, _, _ := net.SplitHostPort(cfg.ClickHouse.Addr[0]); h != "clickhouse" {
		t.Errorf("%s: clickhouse.addr %s is not the clickhouse service", host, cfg.ClickHouse.Addr)
	}
	_, metricsPort, err := net.SplitHostPort(cfg.Metrics.Listen)
	if err != nil {
		t.Fatal(err)
	}

	p := cf.Services["prometheus"]
	pm := mounts(p.Volumes)
	promHost, ok := pm["/etc/prometheus/prometheus.yml"]
	if !ok {
		t.Fatal("prometheus: no prometheus.yml mounted")
	}
	if pm["/etc/prometheus/alerts.yml"] != "./prometheus/alerts.yml" {
		t.Error("prometheus: deploy/prometheus/alerts.yml is not mounted at /etc/prometheus/alerts.yml")
	}
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	pdata, err := os.ReadFile(promHost)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(pdata, &prom); err != nil {
		t.Fatalf("%s: %v", promHost, err)
	}
	if !slices.Contains(prom.RuleFiles, "/etc/prometheus/alerts.yml") {
		t.Errorf("%s: rule_files %q lacks /etc/prometheus/alerts.yml", promHost, prom.RuleFiles)
	}
	scraped := false
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			if sc.JobName == "binlog2ch" && slices.Contains(st.Targets, "binlog2ch:"+metricsPort) {
				scraped = true
			}
		}
	}
	if !scraped {
		t.Errorf("%s: no job binlog2ch scraping binlog2ch:%s (metrics.listen %s)", promHost, metricsPort, cfg.Metrics.Listen)
	}
}

// TestDockerfile checks the image builds with the Go release go.mod asks
// for and runs the config path the compose file mounts.
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	if want := "FROM golang:" + string(m[1]) + "-"; !strings.Contains(string(df), want) {
		t.Errorf("Dockerfile: want a build stage %s... (go.mod says go %s)", want, m[1])
	}
	if !strings.Contains(string(df), `CMD ["run", "-config", "/etc/binlog2ch/binlog2ch.yaml"]`) {
		t.Error("Dockerfile: CMD does not run the config the compose file mounts")
	}
}

// TestComposeTools runs the real parsers when installed: docker-compose
// (v1 is what Debian 12 packages; `docker compose` v2 also works) and
// promtool on the compose Prometheus config.
func TestComposeTools(t *testing.T) {
	ran := false
	if dc, err := exec.LookPath("docker-compose"); err == nil {
		ran = true
		cmd := exec.Command(dc, "-f", "docker-compose.yml", "config", "-q")
		cmd.Env = append(os.Environ(), "MYSQL_PASSWORD=x", "CLICKHOUSE_PASSWORD=x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docker-compose config: %v\n%s", err, out)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		ran = true
		// --syntax-only: rule_files name paths inside the container.
		if out, err := exec.Command(promtool, "check", "config", "--syntax-only", "compose/prometheus.yml").CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	}
	if !ran {
		t.Skip("neither docker-compose nor promtool is installed: TestCompose's checks only")
	}
}
