//go:build e2e

package api

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The chart's refusal of a RabbitMQ transport without a user, word for
// word the parts a user needs: what to set, what to create, why not guest.
var brokerUserRefusal = []string{
	"config.transports.rabbitmq.config.username is required",
	"create a user for asya-sync on the RabbitMQ broker and set its name here",
	"guest works only from localhost unless the broker's loopback_users allows it",
}

// existingCredentials name the hook credentials as existing Secrets, so
// that helm template, which sees no cluster, renders without generating
// them: these tests look at the service configuration only.
var existingCredentials = []string{"--set", "hooks.tls.existingSecret=asya-sync-tls", "--set", "hooks.auth.token.existingSecret=asya-sync-token"}

// TestHelmBrokerUser: the chart defaults no RabbitMQ user, since stock
// RabbitMQ admits guest only from localhost. Its default values are
// refused with a message saying what to do; an explicit user, guest
// included, or a disabled transport renders; and every values file of the
// repository, layered as its header says, renders as it is.
func TestHelmBrokerUser(t *testing.T) {
	template := func(args ...string) (string, error) {
		return env.Helm(slices.Concat([]string{"template", "asya-sync", "./chart", "--namespace", "asya-system"}, existingCredentials, args)...)
	}
	for name, args := range map[string][]string{
		"defaults":   nil,
		"empty user": {"--set", "config.transports.rabbitmq.config.username="},
	} {
		out, err := template(args...)
		if err == nil {
			t.Errorf("%s: rendered; want a refusal", name)
			continue
		}
		for _, want := range brokerUserRefusal {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the refusal does not say %q:\n%s", name, want, out)
			}
		}
	}
	// A second RabbitMQ transport needs its own user.
	out, err := template(slices.Concat(testenv.BrokerUser, []string{"--set", "config.transports.other.type=rabbitmq", "--set", "config.transports.other.config.host=mq"})...)
	if err == nil || !strings.Contains(out, "config.transports.other.config.username is required") {
		t.Errorf("a second RabbitMQ transport without a user: err %v, want a refusal naming it:\n%s", err, out)
	}

	for name, tc := range map[string]struct {
		args []string
		user string // the default transport's user in the rendered configuration; "" for none
	}{
		"explicit guest":     {[]string{"--set", "config.transports.rabbitmq.config.username=guest"}, "guest"},
		"disabled transport": {[]string{"--set", "config.transports.rabbitmq.enabled=false"}, ""},
	} {
		objs := renderWithout(t, tc.args...)
		if got := rabbitUsers(t, objs)["rabbitmq"]; got != tc.user {
			t.Errorf("%s: the rendered rabbitmq user is %q, want %q", name, got, tc.user)
		}
		if tc.user != "" {
			serviceAccepts(t, serviceConfigMap(t, objs))
		}
	}

	// The repository's values files, each layered as its header says.
	layered := map[string][]string{
		"examples/values-rabbitmq.yaml":    {"examples/values-rabbitmq.yaml"},
		"examples/values-large-fleet.yaml": {"examples/values-rabbitmq.yaml", "examples/values-large-fleet.yaml"},
		"examples/values-sqs-irsa.yaml":    {"examples/values-sqs-irsa.yaml"},
		"chart/ci/full-values.yaml":        {"chart/ci/full-values.yaml"},
	}
	var found []string
	for _, pattern := range []string{"examples/values-*.yaml", "chart/ci/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(env.Root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(env.Root, f)
			found = append(found, rel)
		}
	}
	for _, file := range found {
		files, ok := layered[file]
		if !ok {
			t.Errorf("%s: a values file this test does not render; add it (with the files its header layers it over)", file)
			continue
		}
		var args []string
		for _, f := range files {
			args = append(args, "-f", f)
		}
		objs := renderWithout(t, args...)
		users := rabbitUsers(t, objs)
		for transport, user := range users {
			if user == "" {
				t.Errorf("%s: RabbitMQ transport %s renders without a user", file, transport)
			}
		}
		if _, ok := users["rabbitmq"]; ok { // the example actor's transport
			serviceAccepts(t, serviceConfigMap(t, objs))
		}
	}
}

// renderWithout renders the chart with args, without BrokerUser.
func renderWithout(t *testing.T, args ...string) map[string]testenv.Obj {
	t.Helper()
	return helmTemplate(t, slices.Concat([]string{"--namespace", "asya-system"}, existingCredentials, args))
}

// rabbitUsers is the user of each enabled RabbitMQ transport in the
// service configuration the chart rendered.
func rabbitUsers(t *testing.T, objs map[string]testenv.Obj) map[string]string {
	t.Helper()
	var cfg struct {
		Transports map[string]struct {
			Type    string `json:"type"`
			Enabled *bool  `json:"enabled"`
			Config  struct {
				Username string `json:"username"`
			} `json:"config"`
		} `json:"transports"`
	}
	if err := yaml.Unmarshal([]byte(testenv.Str(serviceConfigMap(t, objs), "data", "config.yaml")), &cfg); err != nil {
		t.Fatal(err)
	}
	users := map[string]string{}
	for name, tr := range cfg.Transports {
		if tr.Type == "rabbitmq" && (tr.Enabled == nil || *tr.Enabled) {
			users[name] = tr.Config.Username
		}
	}
	return users
}

// serviceConfigMap is the rendered ConfigMap that holds the service
// configuration, whatever the release's names.
func serviceConfigMap(t *testing.T, objs map[string]testenv.Obj) testenv.Obj {
	t.Helper()
	for key, o := range objs {
		if strings.HasPrefix(key, "ConfigMap/") && testenv.Str(o, "data", "config.yaml") != "" {
			return o
		}
	}
	t.Fatalf("no ConfigMap with config.yaml among %v", testenv.Keys(objs))
	return nil
}
