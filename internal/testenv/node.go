//go:build e2e

package testenv

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The node tier (ASYA_E2E_NODE=1): a real kubelet, containerd and runc on
// this machine, a scheduler, and the controller manager's workload
// controllers, so that actors' pods really run. Its network is a bridge the
// tier makes itself; the node's address is the bridge's gateway, where the
// brokers are relayed for the pods. kube-proxy routes the Services' cluster
// IPs to their pods, so hook calls go through the Service as in a cluster.
// Nothing else is used: traffic stays on loopback, the bridge and the pods'
// network namespaces.
const (
	NodeName   = "e2e-node"
	nodeBridge = "asyae2e0"
	nodeSubnet = "10.213.0.0/24"
	NodeIP     = "10.213.0.1"
	// nodeControllers are what a cluster runs for Deployments, StatefulSets,
	// the HPA KEDA makes, namespaces, service accounts (each namespace's
	// "default" and the CA its pods' tokens come with) and the garbage
	// collector; the node lifecycle controller lifts the not-ready taint a
	// new node starts with. The EndpointSlice controller gives kube-proxy a
	// Service's Ready pods, and the disruption controller keeps a
	// PodDisruptionBudget's count, which evictions check.
	nodeControllers = "garbagecollector,clusterrole-aggregation-controller,deployment-controller,replicaset-controller,statefulset-controller," +
		"horizontal-pod-autoscaler-controller,namespace-controller,pod-garbage-collector-controller,node-lifecycle-controller," +
		"serviceaccount-controller,root-ca-certificate-publisher-controller,endpointslice-controller,disruption-controller"
)

// NodeImage names an image the tier built offline (.ci/node.sh).
func NodeImage(name string) string { return "e2e.local/" + name + ":e2e" }

type node struct {
	Dir        string
	bin        string // kubelet, kube-scheduler, kube-proxy
	CtrdBin    string // containerd, ctr, the shim
	Sock       string
	containerd *Process
	kubelet    *Process
	scheduler  *Process
	proxy      *Process
	relays     []net.Listener
	veths      map[string]bool // the host's veth interfaces before the node started
}

func vethsNow() []string {
	paths, _ := filepath.Glob("/sys/class/net/veth*")
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

func nodeWanted() bool { return os.Getenv("ASYA_E2E_NODE") == "1" }

// startNode brings the node up: bridge, relays, containerd with the images
// imported, scheduler, kubelet; it returns once the Node is Ready.
func (e *Env) startNode(ctx context.Context) (*node, error) {
	n := &node{Dir: filepath.Join(e.Work, "node"), bin: e.Bin, CtrdBin: os.Getenv("ASYA_E2E_CONTAINERD_BIN")}
	images := os.Getenv("ASYA_E2E_NODE_IMAGES")
	if n.CtrdBin == "" || images == "" {
		return nil, fmt.Errorf("ASYA_E2E_CONTAINERD_BIN or ASYA_E2E_NODE_IMAGES is not set (run .ci/e2e.sh, which builds the node)")
	}
	for _, f := range []string{filepath.Join(n.bin, "kubelet"), filepath.Join(n.bin, "kube-scheduler"), filepath.Join(n.bin, "kube-proxy"),
		"/usr/sbin/runc", "/usr/sbin/nft", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local"} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("node piece missing: %w", err)
		}
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	n.Sock = filepath.Join(n.Dir, "containerd.sock")
	n.veths = map[string]bool{}
	for _, v := range vethsNow() {
		n.veths[v] = true
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"bridge " + nodeBridge, n.makeBridge},
		{"broker and API server relays", func() error { return n.startRelays(e.Cluster) }},
		{"containerd", n.startContainerd},
		{"image import", func() error { return n.importImages(images) }},
		{"kube-scheduler", func() error { return n.startScheduler(e.Cluster) }},
		{"kubelet", func() error { return n.startKubelet(ctx, e.Cluster) }},
		{"kube-proxy", func() error { return n.startProxy(e.Cluster) }},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.do(); err != nil {
			n.Stop()
			return nil, fmt.Errorf("node: %s: %w", s.what, err)
		}
		e.Timed("node: "+s.what, t)
	}
	return n, nil
}

func runCmd(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// makeBridge creates the pods' bridge with the node's address. A bridge
// left by an earlier run that died is removed first.
func (n *node) makeBridge() error {
	_ = runCmd("ip", "link", "del", nodeBridge)
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", NodeIP + "/24", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if err := runCmd("ip", args...); err != nil {
			return err
		}
	}
	return nil
}

// startRelays makes the brokers, which listen on loopback only, reachable
// from the pods at the node's address, the RabbitMQ management API at
// NodeManagementPort, and the API server at its own port, which the
// kubernetes Service names (advertiseAddress).
func (n *node) startRelays(c *cluster) error {
	api := c.APIPort()
	for port, to := range map[string]string{"5672": "5672", SQSPort(): SQSPort(), NodeManagementPort: "15672", PubSubPort(): PubSubPort(), api: api} {
		l, err := net.Listen("tcp", net.JoinHostPort(NodeIP, port))
		if err != nil {
			return err
		}
		n.relays = append(n.relays, l)
		go relay(l, net.JoinHostPort("127.0.0.1", to))
	}
	return nil
}

// NodeManagementPort relays RabbitMQ's management API for the pods. The
// API listens on every address, but RabbitMQ admits guest only from
// loopback, there as on AMQP: through the relay the service's calls, as
// guest, come from loopback.
const NodeManagementPort = "15673"

// PubSubPort is the Pub/Sub emulator's port (of ASYA_TEST_PUBSUB_ENDPOINT,
// default 8085).
func PubSubPort() string {
	_, port, err := net.SplitHostPort(PubSubEndpoint())
	if err != nil {
		return "8085"
	}
	return port
}

// SQSPort is the SQS emulator's port (ASYA_SQS_PORT, default 9324).
func SQSPort() string {
	if p := os.Getenv("ASYA_SQS_PORT"); p != "" {
		return p
	}
	return "9324"
}

func relay(l net.Listener, to string) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := net.DialTimeout("tcp", to, 5*time.Second)
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(in, out); in.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// containerdConfig: the CRI with the pinned local sandbox image, the
// bridge network, Debian's runc, no pull that could leave the machine, and
// network namespaces under the tier's own directory.
func (n *node) containerdConfig() string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[4]q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %[5]q

[plugins.'io.containerd.cri.v1.runtime']
  # runc cannot lower oom_score_adj without CAP_SYS_RESOURCE.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = %[6]q
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '/usr/sbin/runc'
        SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true

# NRI's socket would be a global path; nothing here uses it.
[plugins.'io.containerd.nri.v1.nri']
  disable = true
`, filepath.Join(n.Dir, "containerd"), filepath.Join(n.Dir, "containerd-state"), n.Sock,
		NodeImage("pause"), filepath.Join(n.Dir, "registry"), filepath.Join(n.Dir, "cni"))
}

// cniConfig: one bridge, host-local addresses, the node as the gateway.
func (n *node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "asya-e2e",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": %q,
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}]
    }
  }]
}`, nodeBridge, filepath.Join(n.Dir, "cni-ipam"), nodeSubnet, NodeIP)
}

func (n *node) startContainerd() error {
	cfg := filepath.Join(n.Dir, "containerd.toml")
	// Every registry resolves to a closed loopback port: an image that is
	// not local fails at once, and no pull leaves the machine.
	hosts := filepath.Join(n.Dir, "registry", "_default")
	files := map[string]string{
		cfg: n.containerdConfig(),
		filepath.Join(n.Dir, "cni", "10-asya-e2e.conflist"): n.cniConfig(),
		filepath.Join(hosts, "hosts.toml"):                  "server = \"http://127.0.0.1:9\"\n\n[host.\"http://127.0.0.1:9\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	var err error
	// The shim is found on PATH, next to containerd; Debian's runc by path.
	n.containerd, err = StartProcess("containerd", n.Dir, []string{"PATH=" + n.CtrdBin + ":" + os.Getenv("PATH")},
		filepath.Join(n.CtrdBin, "containerd"), "--config", cfg, "--log-level", "info")
	if err != nil {
		return err
	}
	return WaitFor("containerd", 30*time.Second, n.containerd, func() error {
		return runCmd(filepath.Join(n.CtrdBin, "ctr"), "--address", n.Sock, "version")
	})
}

func (n *node) ctr(args ...string) error {
	return runCmd(filepath.Join(n.CtrdBin, "ctr"), append([]string{"--address", n.Sock, "--namespace", "k8s.io"}, args...)...)
}

// importImages imports every archive in dir. An OCI archive (the release
// image, .ci/node.sh) is imported with the digest reference a pull from a
// registry records beside the tag, <repository>@<index digest>, so that
// the kubelet reports the image by that digest as on a cluster.
// --base-name is the repository of that reference; --local, because
// ctr's import through the transfer service (containerd 2.x) adds no
// digest reference to an image its archive names.
func (n *node) importImages(dir string) error {
	tars, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	if len(tars) == 0 {
		return fmt.Errorf("no image in %s", dir)
	}
	for _, t := range tars {
		args := []string{"images", "import", "--no-unpack=false"}
		repo, err := ociRepository(t)
		if err != nil {
			return err
		}
		if repo != "" {
			args = append(args, "--local", "--base-name", repo, "--digests")
		}
		if err := n.ctr(append(args, t)...); err != nil {
			return err
		}
	}
	return nil
}

// ociRepository is the repository of the name an OCI archive's index.json
// gives its image (containerd's annotation), or "" for an archive without
// index.json (docker-archive).
func ociRepository(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", archive, err)
		}
		if path.Clean(h.Name) != "index.json" {
			continue
		}
		var idx struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return "", fmt.Errorf("%s: index.json: %w", archive, err)
		}
		if len(idx.Manifests) != 1 {
			return "", fmt.Errorf("%s: index.json lists %d images, want 1", archive, len(idx.Manifests))
		}
		ref := idx.Manifests[0].Annotations["io.containerd.image.name"]
		// The tag is after the last colon, unless that colon is a port's.
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			ref = ref[:i]
		}
		if ref == "" {
			return "", fmt.Errorf("%s: index.json names no image (io.containerd.image.name)", archive)
		}
		return ref, nil
	}
}

func (n *node) startScheduler(c *cluster) error {
	var err error
	n.scheduler, err = StartProcess("kube-scheduler", n.Dir, nil, filepath.Join(n.bin, "kube-scheduler"),
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1")
	return err
}

func (n *node) kubeletConfig(c *cluster) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine's cgroups are v1.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[3]q}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: %[4]q
# No DNS for the pods: every address they use is an IP.
resolvConf: ""
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
syncFrequency: 10s
fileCheckFrequency: 0s
nodeStatusUpdateFrequency: 5s
`, n.Sock, NodeIP, c.pki.caPEM, filepath.Join(n.Dir, "pod-logs"))
}

func (n *node) startKubelet(ctx context.Context, c *cluster) error {
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(n.kubeletConfig(c)), 0o644); err != nil {
		return err
	}
	var err error
	n.kubelet, err = StartProcess("kubelet", n.Dir, nil, filepath.Join(n.bin, "kubelet"),
		"--config="+cfg,
		"--kubeconfig="+c.Kubeconfig,
		"--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "kubelet-pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
		"--v=1")
	if err != nil {
		return err
	}
	nodes := GVR{APIVersion: "v1", Resource: "nodes", Kind: "Node"}
	return WaitFor("node "+NodeName+" Ready and untainted", 2*time.Minute, n.kubelet, func() error {
		o, err := c.Client.Get(ctx, nodes, "", NodeName)
		if err != nil {
			return err
		}
		if taints, _ := Field(o, "spec", "taints").([]any); len(taints) > 0 {
			return fmt.Errorf("tainted %s", MustJSON(taints))
		}
		conds, _ := Field(o, "status", "conditions").([]any)
		for _, x := range conds {
			if Str(x.(Obj), "type") == "Ready" {
				if Str(x.(Obj), "status") == "True" {
					return nil
				}
				return fmt.Errorf("Ready=%s: %s", Str(x.(Obj), "status"), Str(x.(Obj), "message"))
			}
		}
		return fmt.Errorf("no Ready condition yet")
	})
}

// proxyTables are the nftables tables kube-proxy's nftables mode writes
// its rules into, one per IP family.
var proxyTables = [][]string{{"ip", "kube-proxy"}, {"ip6", "kube-proxy"}}

// startProxy runs kube-proxy in nftables mode: the node reaches a Service's
// cluster IP, and kube-proxy picks one of its Ready pods, as on a cluster's
// nodes. nftables rather than iptables: its rules live in tables of its own,
// which the teardown deletes whole, where the iptables mode adds jumps to
// the host's shared built-in chains and sets net.ipv4.conf.all.route_localnet
// for localhost node ports; this kernel has both, and Debian's nft (1.0.6)
// is newer than the 1.0.1 kube-proxy needs. The conntrack settings and the
// OOM score are left as they are (0 keeps them), and the health and metrics
// servers listen on loopback only. The Services' range is routed to the
// bridge, so that a cluster IP kube-proxy does not serve never leaves the
// machine.
func (n *node) startProxy(c *cluster) error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
oomScoreAdj: 0
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, c.Kubeconfig, NodeName, nodeSubnet, ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	if err := runCmd("ip", "route", "replace", serviceCIDR, "dev", nodeBridge, "src", NodeIP); err != nil {
		return err
	}
	n.proxy, err = StartProcess("kube-proxy", n.Dir, nil, filepath.Join(n.bin, "kube-proxy"), "--config="+cfg, "--v=1")
	if err != nil {
		return err
	}
	// Healthy once it has written the rules of the Services it found.
	return WaitFor("kube-proxy", time.Minute, n.proxy, HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])))
}

// Stop tears the node down and leaves nothing behind: every pod's
// containers, the shims, the mounts under the node's directory, the pods'
// network namespaces, kube-proxy's tables and the bridge. It returns what
// it could not remove.
func (n *node) Stop() []string {
	if n.kubelet != nil {
		n.kubelet.Stop(20 * time.Second)
	}
	if n.scheduler != nil {
		n.scheduler.Stop(5 * time.Second)
	}
	if n.proxy != nil {
		n.proxy.Stop(5 * time.Second)
		for _, table := range proxyTables {
			_ = runCmd("nft", "delete", "table", table[0], table[1])
		}
	}
	if n.containerd != nil && !n.containerd.exited() {
		n.removeContainers()
		n.containerd.Stop(20 * time.Second)
	}
	n.killShims()
	for _, l := range n.relays {
		l.Close()
	}
	n.unmountAll()
	// A pod's network namespace can outlive its processes and mounts for a
	// while (the kernel frees it lazily); its veth goes with the host end.
	for _, v := range vethsNow() {
		if !n.veths[v] {
			_ = runCmd("ip", "link", "del", v)
		}
	}
	_ = runCmd("ip", "link", "del", nodeBridge)
	removeCgroups("kubepods")
	return n.leftovers()
}

// removeContainers stops and removes every task and container the CRI
// made, sandboxes included, so that the shims exit.
func (n *node) removeContainers() {
	out, err := exec.Command(filepath.Join(n.CtrdBin, "ctr"), "--address", n.Sock, "--namespace", "k8s.io",
		"containers", "list", "--quiet").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = n.ctr("tasks", "delete", "--force", id)
		_ = n.ctr("containers", "delete", id)
	}
}

// nodeProcesses lists the processes started for this node (shims and what
// runs in the containers are not our children): those whose command line
// names the node's directory.
func (n *node) nodeProcesses() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), n.Dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (n *node) killShims() {
	for i := 0; i < 50; i++ {
		pids := n.nodeProcesses()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func (n *node) unmountAll() {
	for i := 0; i < 3; i++ {
		for _, m := range mountsUnder(n.Dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
}

// removeCgroups removes the cgroups the kubelet made under name, in every
// v1 hierarchy, deepest first (only empty ones can go).
func removeCgroups(name string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	for _, root := range roots {
		var dirs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

// leftovers is what the teardown could not remove.
func (n *node) leftovers() []string {
	var out []string
	for _, pid := range n.nodeProcesses() {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("process %d: %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	for _, m := range mountsUnder(n.Dir) {
		out = append(out, "mount "+m)
	}
	if _, err := net.InterfaceByName(nodeBridge); err == nil {
		out = append(out, "bridge "+nodeBridge)
	}
	for _, table := range proxyTables {
		if n.proxy != nil && runCmd("nft", "list", "table", table[0], table[1]) == nil {
			out = append(out, "nftables table "+table[0]+" "+table[1])
		}
	}
	for _, v := range vethsNow() {
		if !n.veths[v] {
			out = append(out, "interface "+v)
		}
	}
	return out
}
