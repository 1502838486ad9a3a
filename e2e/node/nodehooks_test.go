//go:build e2e

package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The node tier's asya-sync runs as the chart installs it: a pod of its own
// image on the node, with the chart's generated TLS certificate and token.
// The driver calls the hook URL the chart writes, the Service's name: it
// dials the Service's cluster IP, which kube-proxy routes to a Ready pod,
// and verifies the certificate for the URL's host, as Metacontroller does.
const (
	nodeServiceNS = "asya-node"
	nodeRelease   = "asya-sync-node"
)

// nodeSetup is what the service runs: its image tag (e2e-next serves the
// other runtime script that image holds) and the runtime delivery.
type nodeSetup struct{ tag, delivery string }

var nodeDefault = nodeSetup{tag: "e2e", delivery: "configMap"}

// nodeValues: the service's image, and transports on the brokers as the
// pods reach them, at the node's address.
func nodeValues(r nodeSetup) string {
	script := ""
	if r.tag == "e2e-next" {
		script = "\n  - {name: ASYA_RUNTIME_SCRIPT_PATH, value: /e2e/asya_runtime.py}"
	}
	// A short drain: each upgrade here waits for the old pod to go, and
	// the drain itself is TestNodeHookCallsThroughRollouts's.
	return fmt.Sprintf(`image: {repository: e2e.local/asya-sync, tag: %[5]s, pullPolicy: Never}
replicaCount: 1
drainDelaySeconds: 2
compositeController: {name: %[1]s}
credentials:
  aws: {secretName: aws-service}
  rabbitmq:
    rabbitmq-vh: {secretName: rabbitmq-vh-service, key: password}
extraEnv:
  - {name: AWS_REGION, value: us-east-1}
  - {name: AWS_EC2_METADATA_DISABLED, value: "true"}%[6]s
config:
  sidecarImage: %[2]s
  runtimeDelivery: %[7]s
  flatActors: {transport: rabbitmq, sidecarImage: %[2]s}
  transports:
    rabbitmq:
      type: rabbitmq
      enabled: true
      config: {host: %[3]s, port: 5672, username: guest, managementURL: "http://%[3]s:%[10]s", exchange: asya-node}
    rabbitmq-default-exchange:
      type: rabbitmq
      enabled: true
      config: {host: %[3]s, port: 5672, username: guest, managementURL: "http://%[3]s:%[10]s"}
    rabbitmq-vh:
      type: rabbitmq
      enabled: true
      config:
        host: %[3]s
        port: 5672
        vhost: %[8]s
        username: %[9]s
        passwordFile: /etc/asya-sync/rabbitmq-vh/password
        passwordSecretRef: {name: rabbitmq-vh, key: password}
        managementURL: "http://%[3]s:%[10]s"
        exchange: asya-node
    sqs:
      type: sqs
      enabled: true
      config:
        region: us-east-1
        accountId: "000000000000"
        endpoint: "http://%[3]s:%[4]s"
        waitTimeSeconds: 1
        credentials:
          accessKeyIdSecretRef: {name: aws-creds, key: access-key-id}
          secretAccessKeySecretRef: {name: aws-creds, key: secret-access-key}
    pubsub:
      type: pubsub
      enabled: true
      config: {projectId: %[11]s, endpoint: "%[3]s:%[12]s"}
`, nodeRelease, testenv.NodeImage("sidecar"), testenv.NodeIP, testenv.SQSPort(), r.tag, script, r.delivery, nodeVHost, nodeVHostUser, testenv.NodeManagementPort,
		testenv.PubSubProject, testenv.PubSubPort())
}

var nodeHooks struct {
	once   sync.Once
	driver *testenv.Driver
	err    error
}

func needNode(t *testing.T) {
	t.Helper()
	if env.Node == nil {
		t.Skip("the node tier is not up: it runs with ASYA_E2E_NODE=1 (.ci/e2e.sh node)")
	}
}

// nodeDriver is the driver of the chart's asya-sync running on the node,
// installed on first use.
func nodeDriver(t *testing.T) *testenv.Driver {
	t.Helper()
	needNode(t)
	nodeHooks.once.Do(func() {
		start := time.Now()
		nodeHooks.driver, nodeHooks.err = installNodeService(context.Background())
		env.Timed("node: asya-sync from the chart, Ready", start)
	})
	if nodeHooks.err != nil {
		t.Fatalf("asya-sync on the node: %v", nodeHooks.err)
	}
	return nodeHooks.driver
}

func installNodeService(ctx context.Context) (*testenv.Driver, error) {
	k := env.Cluster.Client
	for _, o := range []testenv.Obj{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": testenv.Obj{"name": nodeServiceNS}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": testenv.Obj{"name": "aws-service", "namespace": nodeServiceNS},
			"stringData": testenv.Obj{"access-key-id": "e2e", "secret-access-key": "e2e"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": testenv.Obj{"name": "rabbitmq-vh-service", "namespace": nodeServiceNS},
			"stringData": testenv.Obj{"password": nodeVHostPassword}},
	} {
		if _, err := k.Apply(ctx, o, "e2e"); err != nil {
			return nil, err
		}
	}
	if err := helmNodeService(ctx, "install", nodeDefault); err != nil {
		return nil, err
	}
	return chartDriver(ctx, nodeRelease)
}

// chartDriver is the driver of the chart's CompositeController cc, whose
// hooks it calls through the Service their URL names.
func chartDriver(ctx context.Context, cc string) (*testenv.Driver, error) {
	k := env.Cluster.Client
	r, err := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return nil, err
	}
	c, err := k.Get(ctx, r, "", cc)
	if err != nil {
		return nil, err
	}
	d, err := testenv.NewDriver(ctx, k, c)
	if err != nil {
		return nil, err
	}
	for _, wh := range d.Hooks {
		wh.Client.Transport.(*http.Transport).DialContext = dialService
	}
	return d, nil
}

// helmNodeService installs or upgrades the service and waits until a new
// pod, alone, is Ready.
func helmNodeService(ctx context.Context, verb string, r nodeSetup) error {
	values := filepath.Join(env.Work, "node-values.yaml")
	if err := os.WriteFile(values, []byte(nodeValues(r)), 0o600); err != nil {
		return err
	}
	// Every upgrade here changes the pod template: a new pod replaces the old.
	old := map[string]bool{}
	if pods, err := env.Cluster.Client.List(ctx, podsGVR, nodeServiceNS, nodeServiceSelector); err == nil {
		for _, p := range pods {
			old[testenv.Str(p, "metadata", "name")] = true
		}
	}
	if _, err := env.Helm(verb, nodeRelease, "./chart", "-n", nodeServiceNS, "-f", values); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := env.Cluster.Client.List(ctx, podsGVR, nodeServiceNS, nodeServiceSelector)
		if err != nil {
			return err
		}
		if len(pods) == 1 && podReady(pods[0]) && !old[testenv.Str(pods[0], "metadata", "name")] {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("asya-sync %+v not the one Ready pod after 2 min\n%s", r, podReport(ctx, nodeServiceNS, nodeServiceSelector))
}

const nodeServiceSelector = "app.kubernetes.io/instance=" + nodeRelease

// dialService connects to the Service a hook URL's host names
// (<name>.<namespace>, as the chart writes it, or longer), at its cluster
// IP, as the cluster's DNS would resolve it; kube-proxy routes the
// connection to one of its Ready pods. The dialer is Go's default
// transport's, which Metacontroller's webhook client clones.
func dialService(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 {
		return nil, fmt.Errorf("%s names no Service (<name>.<namespace>)", host)
	}
	svc, err := env.Cluster.Client.Get(ctx, servicesGVR, labels[1], labels[0])
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	ip := testenv.Str(svc, "spec", "clusterIP")
	if ip == "" || ip == "None" {
		return nil, fmt.Errorf("Service %s/%s has no cluster IP", labels[1], labels[0])
	}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
}

var servicesGVR = testenv.GVR{APIVersion: "v1", Resource: "services", Kind: "Service", Namespaced: true}

var podsGVR = testenv.GVR{APIVersion: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}

// waitPodsReady waits until n pods of the selector are Ready, and on
// timeout says why: each pod's conditions, container states and events,
// and the end of its containers' logs.
func waitPodsReady(ctx context.Context, ns, selector string, n int, within time.Duration) ([]testenv.Obj, error) {
	var ready []testenv.Obj
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		pods, err := env.Cluster.Client.List(ctx, podsGVR, ns, selector)
		if err != nil {
			return nil, err
		}
		ready = ready[:0]
		for _, p := range pods {
			if podReady(p) && testenv.Field(p, "metadata", "deletionTimestamp") == nil {
				ready = append(ready, p)
			}
		}
		if len(ready) >= n {
			return ready, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil, fmt.Errorf("%d of %d pods %s in %s Ready after %s\n%s", len(ready), n, selector, ns, within, podReport(ctx, ns, selector))
}

func podReady(p testenv.Obj) bool {
	conds, _ := testenv.Field(p, "status", "conditions").([]any)
	for _, c := range conds {
		if testenv.Str(c.(testenv.Obj), "type") == "Ready" && testenv.Str(c.(testenv.Obj), "status") == "True" {
			return true
		}
	}
	return false
}

// podReport describes the pods of a selector for a failure message.
func podReport(ctx context.Context, ns, selector string) string {
	k := env.Cluster.Client
	pods, err := k.List(ctx, podsGVR, ns, selector)
	if err != nil {
		return err.Error()
	}
	events, _ := k.List(ctx, testenv.GVR{APIVersion: "v1", Resource: "events", Kind: "Event", Namespaced: true}, ns, "")
	var b strings.Builder
	if len(pods) == 0 {
		b.WriteString("no pods\n")
	}
	for _, p := range pods {
		name := testenv.Str(p, "metadata", "name")
		fmt.Fprintf(&b, "pod %s: phase %s node %q\n", name, testenv.Str(p, "status", "phase"), testenv.Str(p, "spec", "nodeName"))
		conds, _ := testenv.Field(p, "status", "conditions").([]any)
		for _, c := range conds {
			fmt.Fprintf(&b, "  condition %s=%s %s %s\n", testenv.Str(c.(testenv.Obj), "type"), testenv.Str(c.(testenv.Obj), "status"), testenv.Str(c.(testenv.Obj), "reason"), testenv.Str(c.(testenv.Obj), "message"))
		}
		for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
			cs, _ := testenv.Field(p, "status", key).([]any)
			for _, c := range cs {
				fmt.Fprintf(&b, "  container %s ready=%v restarts=%v state=%s last=%s\n", testenv.Str(c.(testenv.Obj), "name"),
					testenv.Field(c.(testenv.Obj), "ready"), testenv.Field(c.(testenv.Obj), "restartCount"), testenv.MustJSON(testenv.Field(c.(testenv.Obj), "state")), testenv.MustJSON(testenv.Field(c.(testenv.Obj), "lastState")))
			}
		}
		for _, e := range events {
			if testenv.Str(e, "involvedObject", "name") == name {
				fmt.Fprintf(&b, "  event %s %s: %s\n", testenv.Str(e, "type"), testenv.Str(e, "reason"), testenv.Str(e, "message"))
			}
		}
		b.WriteString(containerLogs(ns, name))
	}
	return b.String()
}

// containerLogs is the end of each container log of a pod, read where the
// kubelet writes them.
func containerLogs(ns, pod string) string {
	if env.Node == nil {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(env.Node.Dir, "pod-logs", ns+"_"+pod+"_*", "*", "*.log"))
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "  log %s:\n    %s\n", strings.TrimPrefix(f, env.Node.Dir+"/"), strings.Join(lines, "\n    "))
	}
	return b.String()
}
