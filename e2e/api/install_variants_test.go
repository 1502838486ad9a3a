//go:build e2e

package api

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// installSection is the part of docs/install.md that installs the chart.
const installSection = "## 3. asya-sync"

// TestInstallVariantsAsPrinted renders every helm install of the chart that
// docs/install.md's section 3 prints (the first one and each variant:
// cert-manager, existing Secrets, mutual TLS, plain HTTP, an image of
// one's own), with its flags as printed, and the plain manifests: each service
// configuration parses, names a broker user, and gives the service and
// the sidecars a password (a Secret mounted at passwordFile, a
// passwordSecretRef), so that no install as printed leaves the actors at
// BrokerUnavailable; and the API server admits every rendered object.
func TestInstallVariantsAsPrinted(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	cmds := installCommands(t)
	for _, variant := range []string{"hooks.tls.certManager.enabled=true", "hooks.tls.existingSecret=", "hooks.auth.mtls.enabled=true", "hooks.tls.enabled=false", "image.repository="} {
		if !slices.ContainsFunc(cmds, func(c string) bool { return strings.Contains(c, variant) }) {
			t.Errorf("docs/install.md %q prints no helm install with %s; the installs it prints:\n%s", installSection, variant, strings.Join(cmds, "\n"))
		}
	}
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			args := templateArgs(t, c)
			objs := helmTemplate(t, slices.Concat(args, generateOffline))
			checkBrokerCredentials(t, serviceConfigMap(t, objs), objs["Deployment/asya-sync"])
			serviceAccepts(t, serviceConfigMap(t, objs))
			for k, o := range objs {
				if strings.HasPrefix(k, "Certificate/") { // no cert-manager in this tier
					continue
				}
				if err := dryRunApply(ctx, o); err != nil {
					t.Errorf("API server rejects %s: %v", k, err)
				}
			}
		})
	}
	t.Run("manifests", func(t *testing.T) {
		docs, err := testenv.ReadYAMLDocs(filepath.Join(env.Root, "manifests", "asya-sync.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs := map[string]testenv.Obj{}
		for _, d := range docs {
			objs[testenv.Str(d, "kind")+"/"+testenv.Str(d, "metadata", "name")] = d
		}
		checkBrokerCredentials(t, serviceConfigMap(t, objs), objs["Deployment/asya-sync"])
	})
}

// installCommands are the helm installs of the chart in installSection's
// sh blocks (blockCommands), spaces collapsed.
func installCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n"+installSection+"\n")
	if start < 0 {
		t.Fatalf("docs/install.md has no %q", installSection)
	}
	text = text[start+1:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	var cmds []string
	for _, fence := range strings.Split(text, "\n```sh\n")[1:] {
		block, _, _ := strings.Cut(fence, "\n```")
		for _, c := range blockCommands(block + "\n") {
			if c = strings.Join(strings.Fields(c), " "); strings.HasPrefix(c, "helm install asya-sync ./chart ") {
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// templateArgs turns a printed helm install into the arguments of
// helmTemplate: the same namespace, files and values.
func templateArgs(t *testing.T, cmd string) []string {
	t.Helper()
	// The shell variables the printed installs use, as the commands before
	// them in the document set them.
	variables := map[string]string{"version": chartAppVersion(t)}
	expanded := os.Expand(strings.TrimPrefix(cmd, "helm install asya-sync ./chart "), func(name string) string {
		v, ok := variables[name]
		if !ok {
			t.Fatalf("%q: the variable $%s has no value in this test", cmd, name)
		}
		return v
	})
	fields := strings.Fields(expanded)
	var args []string
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; f {
		case "--create-namespace":
		case "-n":
			args = append(args, "--namespace")
		default:
			if strings.ContainsAny(f, `"'`) {
				t.Fatalf("%q: quoting in %s; this test passes words as they are", cmd, f)
			}
			args = append(args, f)
		}
	}
	return args
}

// checkBrokerCredentials: the configuration parses, and every RabbitMQ
// transport names a user, a password Secret for the sidecars and KEDA, and
// a password file the service's Deployment mounts from a Secret.
func checkBrokerCredentials(t *testing.T, cm, deploy testenv.Obj) {
	t.Helper()
	raw := testenv.Str(cm, "data", "config.yaml")
	if _, err := config.Parse([]byte(raw)); err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, raw)
	}
	var cfg struct {
		Transports map[string]struct {
			Type   string `json:"type"`
			Config struct {
				Username          string `json:"username"`
				PasswordFile      string `json:"passwordFile"`
				PasswordSecretRef struct {
					Name string `json:"name"`
				} `json:"passwordSecretRef"`
			} `json:"config"`
		} `json:"transports"`
	}
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	rabbit := 0
	for name, tr := range cfg.Transports {
		if tr.Type != "rabbitmq" {
			continue
		}
		rabbit++
		c := tr.Config
		if c.Username == "" || c.PasswordSecretRef.Name == "" || c.PasswordFile == "" {
			t.Errorf("transport %s: username %q, passwordSecretRef %q, passwordFile %q: the actors would report BrokerUnavailable",
				name, c.Username, c.PasswordSecretRef.Name, c.PasswordFile)
			continue
		}
		if !mountsSecretAt(deploy, path.Dir(c.PasswordFile)) {
			t.Errorf("transport %s: the Deployment mounts no Secret at %s, where passwordFile %s is read", name, path.Dir(c.PasswordFile), c.PasswordFile)
		}
	}
	if rabbit == 0 {
		t.Errorf("no RabbitMQ transport in the configuration:\n%s", raw)
	}
}

// mountsSecretAt: the Deployment's asya-sync container mounts a Secret
// volume at dir.
func mountsSecretAt(deploy testenv.Obj, dir string) bool {
	secretVolumes := map[string]bool{}
	volumes, _ := testenv.Field(deploy, "spec", "template", "spec", "volumes").([]any)
	for _, v := range volumes {
		if vo := v.(map[string]any); vo["secret"] != nil {
			secretVolumes[vo["name"].(string)] = true
		}
	}
	containers, _ := testenv.Field(deploy, "spec", "template", "spec", "containers").([]any)
	for _, c := range containers {
		mounts, _ := c.(map[string]any)["volumeMounts"].([]any)
		for _, m := range mounts {
			mo := m.(map[string]any)
			if mo["mountPath"] == dir && secretVolumes[mo["name"].(string)] {
				return true
			}
		}
	}
	return false
}
