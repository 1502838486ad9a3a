package children

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoIO keeps the functional core pure: the builders and the
// status computation link no broker client and not the service
// configuration (which registers every transport kind's client).
func TestCoreLinksNoIO(t *testing.T) {
	forbidden := []string{
		"github.com/asya-sh/asya-sync/config",
		"github.com/rabbitmq/amqp091-go",
		"github.com/aws/aws-sdk-go-v2/service/sqs",
	}
	for _, pkg := range []string{"github.com/asya-sh/asya-sync/children", "github.com/asya-sh/asya-sync/status"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, f := range forbidden {
			for _, d := range deps {
				if d == f {
					t.Errorf("%s links %s", pkg, f)
				}
			}
		}
	}
}
