package deploy

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// distVersion is the version the test stamps: one git describe gives a
// few commits after a tag, so the package version's conversion is checked
// too.
const (
	distVersion    = "v1.2.3-4-gabcdef0"
	distPkgVersion = "1.2.3+4.gabcdef0"
)

// buildDist runs deploy/dist.sh (what `make dist` runs) for amd64 only,
// into a temporary directory: the arm64 binary is the same build for
// another GOARCH, and building it too would double the test's time.
func buildDist(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("./dist.sh")
	cmd.Env = append(os.Environ(), "DIST_DIR="+dir, "DIST_ARCHES=amd64", "VERSION="+distVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deploy/dist.sh: %v\n%s", err, out)
	}
	return dir
}

// TestPkgVersion checks the package versions dist.sh derives from git
// describe start with a digit and sort as the releases do, by dpkg's own
// comparison.
func TestPkgVersion(t *testing.T) {
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Skip("dpkg is not installed: the package versions' order is not checked here")
	}
	pkgVersion := func(v string) string {
		cmd := exec.Command("./dist.sh", "pkg-version")
		cmd.Env = append(os.Environ(), "VERSION="+v)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("dist.sh pkg-version %s: %v", v, err)
		}
		return strings.TrimSpace(string(out))
	}
	for v, want := range map[string]string{
		"v1.2.3":                  "1.2.3",
		distVersion:               distPkgVersion,
		"v1.2.3-4-gabcdef0-dirty": "1.2.3+4.gabcdef0.dirty",
		"v1.2.3-rc1":              "1.2.3~rc1",
		"d76731c-dirty":           "0.0.0+git.d76731c.dirty",
	} {
		if got := pkgVersion(v); got != want {
			t.Errorf("pkg-version of %s = %q, want %q", v, got, want)
		}
	}
	// Each older than the next.
	order := []string{"0.0.0+git.d76731c", "1.2.3~rc1", "1.2.3", "1.2.3+4.gabcdef0", "1.2.3+4.gabcdef0.dirty", "1.2.4~rc1"}
	for i := 1; i < len(order); i++ {
		if err := exec.Command(dpkg, "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg: %s is not older than %s", order[i-1], order[i])
		}
	}
}

// machineState is what the install test may change on the host, read
// before it starts so that its cleanup restores exactly that.
type machineState struct {
	user, group, etc, varlib bool
}

func readMachineState() machineState {
	_, uerr := user.Lookup("binlog2ch")
	_, gerr := user.LookupGroup("binlog2ch")
	_, eerr := os.Lstat("/etc/binlog2ch")
	_, verr := os.Lstat("/var/lib/binlog2ch")
	return machineState{user: uerr == nil, group: gerr == nil, etc: eerr == nil, varlib: verr == nil}
}

// TestPackageInstall builds the packages as `make dist` does, installs the
// .deb on this machine with dpkg -i, checks what it put where, runs
// systemd-analyze verify on the installed units and the installed binary,
// reinstalls over an edited config, removes the package with dpkg -r and
// purges it. The cleanup purges the package and removes the user and
// directories the test made, whatever failed.
func TestPackageInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and installs the package")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian's dpkg and systemd packages): the .deb is not installed here", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: dpkg -i needs root; the .deb is not installed here")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "binlog2ch").Output(); err == nil && len(out) > 0 && string(out) != "not-installed" {
		t.Skipf("a binlog2ch package is on this machine already (%s): the test would replace it", out)
	}
	if _, err := os.Lstat("/usr/bin/binlog2ch"); err == nil {
		t.Skip("/usr/bin/binlog2ch exists and belongs to no package: the test would replace it")
	}
	before := readMachineState()
	t.Cleanup(func() { restoreMachine(t, before) })

	dir := buildDist(t)
	checkStatic(t, filepath.Join(dir, "binlog2ch_linux_amd64"), elf.EM_X86_64)
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(dir, "*.rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		t.Fatalf("dist.sh made %d .deb and %d .rpm in %s, want one of each", len(debs), len(rpms), dir)
	}
	checkRPM(t, rpms[0])

	t.Logf("dpkg -i:\n%s", run(t, "dpkg", "-i", debs[0]))
	if got := strings.TrimSpace(run(t, "dpkg-query", "-W", "-f", "${Version}", "binlog2ch")); got != distPkgVersion+"-1" {
		t.Errorf("installed version %q, want %q", got, distPkgVersion+"-1")
	}
	want := map[string]fs.FileMode{
		"/usr/bin/binlog2ch":                                 0o755,
		"/usr/lib/systemd/system/binlog2ch.service":          0o644,
		"/usr/lib/systemd/system/binlog2ch-fullsync.service": 0o644,
		"/usr/lib/sysusers.d/binlog2ch.conf":                 0o644,
		"/etc/binlog2ch/binlog2ch.yaml":                      0o640,
		"/etc/binlog2ch":                                     fs.ModeDir | 0o750,
	}
	for p, mode := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("after dpkg -i: %v", err)
			continue
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
		}
	}
	if conf := run(t, "dpkg-query", "-W", "-f", "${Conffiles}", "binlog2ch"); !strings.Contains(conf, "/etc/binlog2ch/binlog2ch.yaml ") {
		t.Errorf("dpkg does not hold /etc/binlog2ch/binlog2ch.yaml as a conffile: %q", conf)
	}
	example, err := os.ReadFile("binlog2ch.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("/etc/binlog2ch/binlog2ch.yaml"); err != nil || !bytes.Equal(got, example) {
		t.Errorf("/etc/binlog2ch/binlog2ch.yaml is not deploy/binlog2ch.example.yaml (%v)", err)
	}

	// The postinst made the user, and the service reads its config through
	// the group (systemd keeps ConfigurationDirectory root's, mode 0750).
	u, err := user.Lookup("binlog2ch")
	if err != nil {
		t.Fatalf("after dpkg -i: no user binlog2ch: %v", err)
	}
	if u.HomeDir != "/var/lib/binlog2ch" {
		t.Errorf("user binlog2ch: home %s, want /var/lib/binlog2ch", u.HomeDir)
	}
	for _, p := range []string{"/etc/binlog2ch", "/etc/binlog2ch/binlog2ch.yaml"} {
		if fi, err := os.Stat(p); err == nil && strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Gid)) != u.Gid {
			t.Errorf("%s: group %d, want binlog2ch's (%s)", p, fi.Sys().(*syscall.Stat_t).Gid, u.Gid)
		}
	}
	// Never enabled by the package.
	if _, err := os.Lstat("/etc/systemd/system/multi-user.target.wants/binlog2ch.service"); err == nil {
		t.Error("the package enabled binlog2ch.service")
	}

	unit := "/usr/lib/systemd/system/binlog2ch.service"
	if data, _ := os.ReadFile(unit); !strings.Contains(string(data), "ExecStart=/usr/bin/binlog2ch run ") {
		t.Errorf("%s does not run /usr/bin/binlog2ch", unit)
	}
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", unit, "/usr/lib/systemd/system/binlog2ch-fullsync.service").CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, "binlog2ch") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if got := strings.TrimSpace(run(t, "/usr/bin/binlog2ch", "version")); got != "binlog2ch "+distVersion {
		t.Errorf("/usr/bin/binlog2ch version: %q, want %q", got, "binlog2ch "+distVersion)
	}

	// An edited config survives a reinstall (an upgrade's path) and dpkg -r.
	edited := append(append([]byte(nil), example...), "\n# edited by TestPackageInstall\n"...)
	if err := os.WriteFile("/etc/binlog2ch/binlog2ch.yaml", edited, 0o640); err != nil {
		t.Fatal(err)
	}
	t.Logf("dpkg -i:\n%s", run(t, "dpkg", "-i", debs[0]))
	if got, _ := os.ReadFile("/etc/binlog2ch/binlog2ch.yaml"); !bytes.Equal(got, edited) {
		t.Error("reinstalling the package replaced the edited /etc/binlog2ch/binlog2ch.yaml")
	}
	// State the daemon wrote: no package owns it, no removal deletes it.
	if err := os.MkdirAll("/var/lib/binlog2ch", 0o750); err != nil {
		t.Fatal(err)
	}
	state := "/var/lib/binlog2ch/checkpoint.json"
	if err := os.WriteFile(state, []byte("{}\n"), 0o640); err != nil {
		t.Fatal(err)
	}

	run(t, "dpkg", "-r", "binlog2ch")
	for _, p := range []string{"/usr/bin/binlog2ch", unit, "/usr/lib/sysusers.d/binlog2ch.conf"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("after dpkg -r: %s is still there", p)
		}
	}
	if got, _ := os.ReadFile("/etc/binlog2ch/binlog2ch.yaml"); !bytes.Equal(got, edited) {
		t.Error("dpkg -r did not leave the edited /etc/binlog2ch/binlog2ch.yaml")
	}
	run(t, "dpkg", "--purge", "binlog2ch")
	if _, err := os.Lstat("/etc/binlog2ch/binlog2ch.yaml"); err == nil {
		t.Error("dpkg --purge left /etc/binlog2ch/binlog2ch.yaml")
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("dpkg --purge removed the state: %v", err)
	}
	if _, err := user.Lookup("binlog2ch"); err != nil {
		t.Errorf("dpkg --purge removed the user binlog2ch (its files in /var/lib/binlog2ch would lose their owner): %v", err)
	}
}

// restoreMachine purges the package and removes what the test created.
func restoreMachine(t *testing.T, before machineState) {
	if out, err := exec.Command("dpkg", "--purge", "binlog2ch").CombinedOutput(); err != nil {
		t.Errorf("cleanup: dpkg --purge binlog2ch: %v\n%s", err, out)
	}
	if !before.user {
		if _, err := user.Lookup("binlog2ch"); err == nil {
			if out, err := exec.Command("userdel", "binlog2ch").CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel binlog2ch: %v\n%s", err, out)
			}
		}
	}
	if !before.group {
		if _, err := user.LookupGroup("binlog2ch"); err == nil {
			if out, err := exec.Command("groupdel", "binlog2ch").CombinedOutput(); err != nil {
				t.Errorf("cleanup: groupdel binlog2ch: %v\n%s", err, out)
			}
		}
	}
	if !before.etc {
		if err := os.RemoveAll("/etc/binlog2ch"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if !before.varlib {
		if err := os.RemoveAll("/var/lib/binlog2ch"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if after := readMachineState(); after != before {
		t.Errorf("cleanup: the machine is not as the test found it: before %+v, after %+v", before, after)
	}
}

// checkStatic checks a binary is for the machine named and static: no
// program interpreter (the dynamic loader) and no shared libraries.
func checkStatic(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: not static (program header %v)", path, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("%s: links %v", path, libs)
	}
}

// checkRPM lists the .rpm's files with rpm where it is installed, and
// otherwise checks nfpm made an RPM file (its lead's magic).
func checkRPM(t *testing.T, path string) {
	t.Helper()
	rpm, err := exec.LookPath("rpm")
	if err != nil {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte{0xed, 0xab, 0xee, 0xdb}) {
			t.Errorf("%s: not an RPM file", path)
		}
		t.Logf("rpm is not installed: %s is checked for its magic only", path)
		return
	}
	out, err := exec.Command(rpm, "-qlp", path).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm -qlp %s: %v\n%s", path, err, out)
	}
	for _, f := range []string{"/usr/bin/binlog2ch", "/usr/lib/systemd/system/binlog2ch.service", "/usr/lib/systemd/system/binlog2ch-fullsync.service", "/usr/lib/sysusers.d/binlog2ch.conf", "/etc/binlog2ch/binlog2ch.yaml"} {
		if !strings.Contains(string(out), f+"\n") {
			t.Errorf("rpm -qlp %s: no %s in\n%s", path, f, out)
		}
	}
	// %config(noreplace): listed by -c, and its flags include noreplace.
	out, err = exec.Command(rpm, "-qp", "--qf", "[%{FILENAMES} %{FILEFLAGS:fflags}\n]", path).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm -qp --qf %s: %v\n%s", path, err, out)
	}
	if !strings.Contains(string(out), "/etc/binlog2ch/binlog2ch.yaml cn\n") {
		t.Errorf("rpm: /etc/binlog2ch/binlog2ch.yaml is not %%config(noreplace) (flags c and n):\n%s", out)
	}
}

// run runs a command and fails the test with its output when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestImage builds deploy/Dockerfile where a container engine answers and
// runs `binlog2ch version` in the image, as its non-root user.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds an image")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker client: the image is not built here")
	}
	if out, err := exec.Command(docker, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no container engine answers (docker info: %v: %s): the image is not built here", err, lastLine(out))
	}
	tag := fmt.Sprintf("binlog2ch-test:%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command(docker, "image", "rm", "-f", tag).Run() })
	build := exec.Command(docker, "build", "-f", "deploy/Dockerfile", "--build-arg", "VERSION="+distVersion, "-t", tag, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(run(t, docker, "run", "--rm", tag, "version")); got != "binlog2ch "+distVersion {
		t.Errorf("binlog2ch version in the image: %q, want %q", got, "binlog2ch "+distVersion)
	}
	if u := strings.TrimSpace(run(t, docker, "image", "inspect", "-f", "{{.Config.User}}", tag)); u == "" || u == "0" || strings.HasPrefix(u, "root") || strings.HasPrefix(u, "0:") {
		t.Errorf("the image runs as %q, want a non-root user", u)
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	if s == "" {
		return "no output"
	}
	return s
}
