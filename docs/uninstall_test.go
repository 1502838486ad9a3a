package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// flatActor is a flat actor of namespace ns, as the hook decodes one.
func flatActor(ns, actor string) *v1alpha1.AsyncActor {
	a := &v1alpha1.AsyncActor{}
	a.Name, a.Namespace = actor, ns
	a.Spec.AsyaGeneration = v1alpha1.Flat
	a.Spec.Actor, a.Spec.Image, a.Spec.Handler = actor, "python:3.12-slim", "h.process"
	return a
}

// TestUninstallNamesWhatTheCodeNames: docs/uninstall.md names the queues
// as the code names them, nested (asya-<name>) and flat
// (asya-<namespace>-<actor>), in prose and in the commands that delete a
// stuck actor's queue.
func TestUninstallNamesWhatTheCodeNames(t *testing.T) {
	doc := readDoc(t, "docs/uninstall.md")
	for _, name := range []string{transport.QueueName("<name>"), transport.FlatQueueName("<namespace>", "<actor>")} {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/uninstall.md does not name the queue %s", name)
		}
	}
	for _, name := range []string{transport.QueueName("NAME"), transport.FlatQueueName("NS", "ACTOR")} {
		if !strings.Contains(doc, "rabbitmqctl delete_queue "+name) {
			t.Errorf("docs/uninstall.md has no command deleting the queue %s", name)
		}
	}
}

// TestUninstallRemovesWhatFinalizeLeaves: what a flat actor's sync creates
// on the broker and no finalize deletes (the namespace's sink and sump
// queues, the namespace's RabbitMQ exchange, the queues' owner records) is
// what docs/uninstall.md says asya-sync leaves, and its commands remove
// exactly that: run as printed, with rabbitmqctl and curl recording their
// calls, they delete the queues transport.EndQueues names, their DLQs,
// their owner records, and the exchange the RabbitMQ transport gives the
// namespace's sidecars.
func TestUninstallRemovesWhatFinalizeLeaves(t *testing.T) {
	const ns = "team-a"
	var ends []string
	for _, q := range transport.EndQueues(ns, config.FlatActors{Sink: config.DefaultSink, Sump: config.DefaultSump}.Ends().QueuesOf(flatActor(ns, "text-analyzer")), v1alpha1.DefaultProcessing) {
		ends = append(ends, q.Name(), q.DLQName())
		sink := flatActor(ns, q.Actor)
		if _, kept := finalize.Kept(finalize.Claim{Actor: sink, Mine: true, Shared: true}); !kept {
			t.Errorf("finalize deletes %s: docs/uninstall.md says it never does", q.Name())
		}
	}
	if len(ends) != 4 {
		t.Fatalf("transport.EndQueues names %v: want a sink and a sump with their DLQs", ends)
	}
	actorQueue := transport.Queue{Actor: "text-analyzer", Namespace: ns, Scoped: true}
	exchange := sidecarExchange(t, actorQueue)
	// The namespace's catch of unroutable messages: its queue, and the
	// exchange and policy named after the namespace's exchange.
	catches, _ := (&rabbitmq.Settings{Exchange: rabbitmq.DefaultExchange, ManagementURL: "http://rabbitmq:15672"}).Catches(actorQueue)
	var catch transport.Queue
	for _, c := range catches {
		if c.Scoped {
			catch = c
		}
	}
	if catch.Name() != "asya-"+ns+transport.UnroutableSuffix {
		t.Fatalf("the namespace's catching queue is %q", catch.Name())
	}
	alternate := exchange + transport.UnroutableSuffix

	doc := readDoc(t, "docs/uninstall.md")
	for _, name := range []string{
		transport.FlatQueueName("<namespace>", config.DefaultSink), transport.FlatQueueName("<namespace>", config.DefaultSump),
		sidecarExchange(t, transport.Queue{Namespace: "<namespace>", Scoped: true}),
		transport.Queue{Namespace: "<namespace>", Scoped: true, Unroutable: true}.Name(),
		transport.Queue{Unroutable: true}.Name(),
	} {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/uninstall.md does not name %s among what asya-sync leaves", name)
		}
	}
	for _, para := range regexp.MustCompile(`\n\s*\n`).Split(doc, -1) {
		if strings.Contains(para, "did not create") && strings.Contains(para, "sink") {
			t.Errorf("docs/uninstall.md counts the sink among the queues asya-sync did not create: every flat actor's sync creates it:\n%s", para)
		}
	}

	block := fencedAfter(t, "docs/uninstall.md", "## Removing what asya-sync leaves on the broker", "sh")
	calls, _ := runRecorded(t, block, []string{"rabbitmqctl", "curl"}, "NS="+ns,
		"RABBITMQ_API=http://rabbitmq:15672", "RABBITMQ_USER=asya", "RABBITMQ_PASSWORD=secret")
	var deleted, exchanges, policies []string
	for _, c := range calls {
		switch {
		case len(c) == 3 && c[0] == "rabbitmqctl" && c[1] == "delete_queue":
			deleted = append(deleted, c[2])
		case len(c) == 4 && c[0] == "rabbitmqctl" && c[1] == "delete_queue" && c[3] == "--if-empty":
			if c[2] != catch.Name() {
				t.Errorf("the commands of docs/uninstall.md delete %s only if empty; only the catching queue %s needs that", c[2], catch.Name())
			}
			deleted = append(deleted, c[2])
		case c[0] == "curl" && slices.Contains(c, "DELETE"):
			for _, arg := range c {
				if rest, ok := strings.CutPrefix(arg, "http://rabbitmq:15672/api/exchanges/%2F/"); ok {
					exchanges = append(exchanges, strings.SplitN(rest, "?", 2)[0])
				}
				if rest, ok := strings.CutPrefix(arg, "http://rabbitmq:15672/api/policies/%2F/"); ok {
					policies = append(policies, rest)
				}
			}
		default:
			t.Errorf("the commands of docs/uninstall.md ran %q, which this test does not know", c)
		}
	}
	ends = append(ends, catch.Name())
	slices.Sort(deleted)
	slices.Sort(ends)
	if !reflect.DeepEqual(deleted, ends) {
		t.Errorf("the commands of docs/uninstall.md delete the queues %v; a flat actor's sync creates %v, which finalize keeps", deleted, ends)
	}
	wantExchanges := []string{exchange, alternate}
	for _, q := range ends {
		if q != catch.Name() { // a catching queue is no claim's
			wantExchanges = append(wantExchanges, rabbitmq.OwnerRecord(q))
		}
	}
	slices.Sort(exchanges)
	slices.Sort(wantExchanges)
	if !reflect.DeepEqual(exchanges, wantExchanges) {
		t.Errorf("the commands of docs/uninstall.md delete the exchanges %v; the sidecars of namespace %s publish to %s, "+
			"whose unroutable messages go to %s, and the queues' owner records are %v", exchanges, ns, exchange, alternate, wantExchanges)
	}
	if !reflect.DeepEqual(policies, []string{alternate}) {
		t.Errorf("the commands of docs/uninstall.md delete the policies %v; the one that catches namespace %s's unroutable messages is %s", policies, ns, alternate)
	}
}

// gracePeriods are docs/uninstall.md's figures for the grace period of an
// actor's pods: a nested actor's default, and what a flat actor's get.
var gracePeriods = regexp.MustCompile("`spec.timeout.gracefulShutdown`" +
	` of a nested actor \((\d+) s by default\).*a flat actor's pods always get (\d+) s`)

// TestUninstallGracePeriods: an actor as the hook (and render) decodes it
// carries the grace period docs/uninstall.md gives its pods (the workload
// copies it into terminationGracePeriodSeconds): a nested actor's
// spec.timeout.gracefulShutdown, or its default; for a flat actor always
// the same, whatever else it writes, since a flat spec that writes
// spec.timeout.gracefulShutdown is refused as a mix of both shapes.
func TestUninstallGracePeriods(t *testing.T) {
	m := gracePeriods.FindStringSubmatch(strings.Join(strings.Fields(readDoc(t, "docs/uninstall.md")), " "))
	if m == nil {
		t.Fatalf("docs/uninstall.md has no sentence matching %s", gracePeriods)
	}
	nestedDefault, _ := strconv.ParseInt(m[1], 10, 64)
	flat, _ := strconv.ParseInt(m[2], 10, 64)
	const nested = `"transport":"mq","workload":{"template":{"spec":{"containers":[{"name":"asya-runtime","image":"i"}]}}}`
	const flatFields = `"actor":"a","image":"i","handler":"m.f"`
	for _, tc := range []struct {
		name, spec string
		want       int64 // the pods' grace period; 0: the spec is refused
	}{
		{"nested, default", `{` + nested + `}`, nestedDefault},
		{"nested, written", `{` + nested + `,"timeout":{"gracefulShutdown":120}}`, 120},
		{"flat", `{` + flatFields + `}`, flat},
		{"flat with a long actor timeout", `{` + flatFields + `,"resiliency":{"actorTimeout":"20m"}}`, flat},
		{"flat with a short actor timeout", `{` + flatFields + `,"resiliency":{"actorTimeout":"2s"}}`, flat},
		{"flat with scaling and replicas", `{` + flatFields + `,"replicas":3,"scaling":{"enabled":false,"cooldownPeriod":600}}`, flat},
		{"flat writing the nested field", `{` + flatFields + `,"timeout":{"gracefulShutdown":120}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := `{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"a","namespace":"ns"},"spec":` + tc.spec + `}`
			actor, specErr, err := hook.DecodeParent([]byte(parent), nil)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.want == 0:
				if specErr == nil {
					t.Errorf("the spec is accepted, with a grace period of %d s", *actor.Spec.Timeout.GracefulShutdown)
				}
			case specErr != nil:
				t.Errorf("the spec is refused: %v", specErr)
			case *actor.Spec.Timeout.GracefulShutdown != tc.want:
				t.Errorf("the pods get %d s; docs/uninstall.md says %d s", *actor.Spec.Timeout.GracefulShutdown, tc.want)
			}
		})
	}
}

// sidecarExchange is the exchange the RabbitMQ transport, with its
// defaults, gives the sidecar of the queue's actor.
func sidecarExchange(t *testing.T, q transport.Queue) string {
	t.Helper()
	s := &rabbitmq.Settings{Host: "rabbitmq"}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.SidecarEnv(q) {
		if e.Name == "ASYA_RABBITMQ_EXCHANGE" {
			return e.Value
		}
	}
	t.Fatal("the RabbitMQ transport gives the sidecar no ASYA_RABBITMQ_EXCHANGE")
	return ""
}

// fencedAfter is the first code block of lang after heading in file.
func fencedAfter(t *testing.T, file, heading, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(readDoc(t, file), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", file, heading)
	}
	_, block, ok := strings.Cut(after, "\n```"+lang+"\n")
	if !ok {
		t.Fatalf("%s: no %s block after %q", file, lang, heading)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatalf("%s: unterminated block after %q", file, heading)
	}
	return block + "\n"
}

// runRecorded runs the shell block with bash in a directory of its own,
// each of the commands replaced by one that records its arguments and
// succeeds, and returns the calls in order and the directory.
func runRecorded(t *testing.T, block string, commands []string, env ...string) (calls [][]string, dir string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the document's commands with")
	}
	dir = t.TempDir()
	bin := filepath.Join(dir, ".bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(bin, "calls")
	for _, c := range commands {
		script := "#!" + bash + "\n{ printf '%s' " + c + "; for a in \"$@\"; do printf '\\t%s' \"$a\"; done; echo; } >> " + log + "\n"
		if err := os.WriteFile(filepath.Join(bin, c), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-u", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, block, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the block ran none of %v: %v", commands, err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		calls = append(calls, strings.Split(line, "\t"))
	}
	return calls, dir
}
