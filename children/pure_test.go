package children

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCoreLinksNoIO keeps the functional core pure: the builders and the
// status computation link no broker client, none of the broker plumbing
// and not the service configuration (which registers every transport
// kind's client), and none of the project's own packages they link imports
// what IO is done with. The Kubernetes and KEDA API types link net/http
// and Prometheus themselves, so those are forbidden as imports of the
// project's packages rather than as links.
func TestCoreLinksNoIO(t *testing.T) {
	const module = "github.com/asya-sh/asya-sync"
	forbiddenLinks := []string{
		module + "/config",
		module + "/transport/brokers",
		module + "/transport/rabbitmq",
		module + "/transport/sqs",
		module + "/transport/pubsub",
		"github.com/rabbitmq/amqp091-go",
		"github.com/aws/aws-sdk-go-v2/service/sqs",
		"cloud.google.com/go/pubsub/v2/apiv1",
		"golang.org/x/sync/singleflight",
	}
	forbiddenImports := []string{"net", "net/http", "github.com/prometheus/client_golang/prometheus", "os/exec"}
	for _, pkg := range []string{module + "/children", module + "/status", module + "/finalize"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			dep, imports, _ := strings.Cut(line, " ")
			if slices.Contains(forbiddenLinks, dep) {
				t.Errorf("%s links %s", pkg, dep)
			}
			if !strings.HasPrefix(dep, module+"/") {
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if slices.Contains(forbiddenImports, imp) {
					t.Errorf("%s links %s, which imports %s", pkg, dep, imp)
				}
			}
		}
	}
}
