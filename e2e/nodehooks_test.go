//go:build e2e

package e2e

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
`, nodeRelease, nodeImage("sidecar"), nodeIP, sqsPort(), r.tag, script, r.delivery, nodeVHost, nodeVHostUser, nodeManagementPort,
		testenv.PubSubProject, pubsubPort())
}

var nodeHooks struct {
	once   sync.Once
	driver *driver
	err    error
}

func needNode(t *testing.T) {
	t.Helper()
	if env.node == nil {
		t.Skip("the node tier is not up: it runs with ASYA_E2E_NODE=1 (.ci/e2e.sh node)")
	}
}

// nodeDriver is the driver of the chart's asya-sync running on the node,
// installed on first use.
func nodeDriver(t *testing.T) *driver {
	t.Helper()
	needNode(t)
	nodeHooks.once.Do(func() {
		start := time.Now()
		nodeHooks.driver, nodeHooks.err = installNodeService(context.Background())
		env.timed("node: asya-sync from the chart, Ready", start)
	})
	if nodeHooks.err != nil {
		t.Fatalf("asya-sync on the node: %v", nodeHooks.err)
	}
	return nodeHooks.driver
}

func installNodeService(ctx context.Context) (*driver, error) {
	k := env.cluster.client
	for _, o := range []obj{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": nodeServiceNS}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": obj{"name": "aws-service", "namespace": nodeServiceNS},
			"stringData": obj{"access-key-id": "e2e", "secret-access-key": "e2e"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": obj{"name": "rabbitmq-vh-service", "namespace": nodeServiceNS},
			"stringData": obj{"password": nodeVHostPassword}},
	} {
		if _, err := k.apply(ctx, o, "e2e"); err != nil {
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
func chartDriver(ctx context.Context, cc string) (*driver, error) {
	k := env.cluster.client
	r, err := k.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return nil, err
	}
	c, err := k.get(ctx, r, "", cc)
	if err != nil {
		return nil, err
	}
	d, err := newDriver(ctx, k, c)
	if err != nil {
		return nil, err
	}
	for _, wh := range d.hooks {
		wh.client.Transport.(*http.Transport).DialContext = dialService
	}
	return d, nil
}

// helmNodeService installs or upgrades the service and waits until a new
// pod, alone, is Ready.
func helmNodeService(ctx context.Context, verb string, r nodeSetup) error {
	values := filepath.Join(env.work, "node-values.yaml")
	if err := os.WriteFile(values, []byte(nodeValues(r)), 0o600); err != nil {
		return err
	}
	// Every upgrade here changes the pod template: a new pod replaces the old.
	old := map[string]bool{}
	if pods, err := env.cluster.client.list(ctx, podsGVR, nodeServiceNS, nodeServiceSelector); err == nil {
		for _, p := range pods {
			old[str(p, "metadata", "name")] = true
		}
	}
	if _, err := env.helm(verb, nodeRelease, "./chart", "-n", nodeServiceNS, "-f", values); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := env.cluster.client.list(ctx, podsGVR, nodeServiceNS, nodeServiceSelector)
		if err != nil {
			return err
		}
		if len(pods) == 1 && podReady(pods[0]) && !old[str(pods[0], "metadata", "name")] {
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
	svc, err := env.cluster.client.get(ctx, servicesGVR, labels[1], labels[0])
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	ip := str(svc, "spec", "clusterIP")
	if ip == "" || ip == "None" {
		return nil, fmt.Errorf("Service %s/%s has no cluster IP", labels[1], labels[0])
	}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
}

var servicesGVR = gvr{APIVersion: "v1", Resource: "services", Kind: "Service", Namespaced: true}

var podsGVR = gvr{APIVersion: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}

// waitPodsReady waits until n pods of the selector are Ready, and on
// timeout says why: each pod's conditions, container states and events,
// and the end of its containers' logs.
func waitPodsReady(ctx context.Context, ns, selector string, n int, within time.Duration) ([]obj, error) {
	var ready []obj
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		pods, err := env.cluster.client.list(ctx, podsGVR, ns, selector)
		if err != nil {
			return nil, err
		}
		ready = ready[:0]
		for _, p := range pods {
			if podReady(p) && field(p, "metadata", "deletionTimestamp") == nil {
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

func podReady(p obj) bool {
	conds, _ := field(p, "status", "conditions").([]any)
	for _, c := range conds {
		if str(c.(obj), "type") == "Ready" && str(c.(obj), "status") == "True" {
			return true
		}
	}
	return false
}

// podReport describes the pods of a selector for a failure message.
func podReport(ctx context.Context, ns, selector string) string {
	k := env.cluster.client
	pods, err := k.list(ctx, podsGVR, ns, selector)
	if err != nil {
		return err.Error()
	}
	events, _ := k.list(ctx, gvr{APIVersion: "v1", Resource: "events", Kind: "Event", Namespaced: true}, ns, "")
	var b strings.Builder
	if len(pods) == 0 {
		b.WriteString("no pods\n")
	}
	for _, p := range pods {
		name := str(p, "metadata", "name")
		fmt.Fprintf(&b, "pod %s: phase %s node %q\n", name, str(p, "status", "phase"), str(p, "spec", "nodeName"))
		conds, _ := field(p, "status", "conditions").([]any)
		for _, c := range conds {
			fmt.Fprintf(&b, "  condition %s=%s %s %s\n", str(c.(obj), "type"), str(c.(obj), "status"), str(c.(obj), "reason"), str(c.(obj), "message"))
		}
		for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
			cs, _ := field(p, "status", key).([]any)
			for _, c := range cs {
				fmt.Fprintf(&b, "  container %s ready=%v restarts=%v state=%s last=%s\n", str(c.(obj), "name"),
					field(c.(obj), "ready"), field(c.(obj), "restartCount"), mustJSON(field(c.(obj), "state")), mustJSON(field(c.(obj), "lastState")))
			}
		}
		for _, e := range events {
			if str(e, "involvedObject", "name") == name {
				fmt.Fprintf(&b, "  event %s %s: %s\n", str(e, "type"), str(e, "reason"), str(e, "message"))
			}
		}
		b.WriteString(containerLogs(ns, name))
	}
	return b.String()
}

// containerLogs is the end of each container log of a pod, read where the
// kubelet writes them.
func containerLogs(ns, pod string) string {
	if env.node == nil {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(env.node.dir, "pod-logs", ns+"_"+pod+"_*", "*", "*.log"))
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
		fmt.Fprintf(&b, "  log %s:\n    %s\n", strings.TrimPrefix(f, env.node.dir+"/"), strings.Join(lines, "\n    "))
	}
	return b.String()
}
