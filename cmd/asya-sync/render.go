package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
)

// builtinRenderConfig is the configuration of render without --config:
// one RabbitMQ transport on the local broker, as examples/config.yaml has
// on a cluster's. Render touches no broker, so only the names matter.
const builtinRenderConfig = `transports:
  rabbitmq:
    type: rabbitmq
    config: {host: 127.0.0.1, username: guest}
`

func runRender(args []string, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "AsyncActor YAML file, - for standard input")
	configPath := fs.String("config", os.Getenv("ASYA_SYNC_CONFIG"),
		"service configuration file; without one, a single RabbitMQ transport \"rabbitmq\" on 127.0.0.1 as guest")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: asya-sync render -f ACTOR.yaml [--config FILE]

Writes the children a sync would return for each actor, as a YAML stream,
touching no broker. The stream's EnvironmentConfigs are the flavors its
actors' spec.flavors name. Without --config (or $ASYA_SYNC_CONFIG) the service
configuration is one RabbitMQ transport named "rabbitmq" on 127.0.0.1 with
the user guest; actors naming another transport need a --config.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("render needs -f ACTOR.yaml")
	}
	h, err := renderHandler(*configPath)
	if err != nil {
		return err
	}
	actors, err := readActors(*file)
	if err != nil {
		return err
	}
	return render(h, actors, out)
}

func renderHandler(configPath string) (*hooksync.Handler, error) {
	var cfg *config.Config
	var err error
	if configPath != "" {
		cfg, err = config.Load(configPath)
	} else {
		cfg, err = config.Parse([]byte(builtinRenderConfig))
	}
	if err != nil {
		return nil, err
	}
	script, err := runtimeScript(cfg)
	if err != nil {
		return nil, err
	}
	return &hooksync.Handler{Config: cfg, Script: script, FlatScript: asyaruntime.EmbeddedHTTP()}, nil
}

// render writes every actor's children as one YAML stream, or nothing if
// any actor is invalid.
func render(h *hooksync.Handler, actors []*v1alpha1.AsyncActor, out io.Writer) error {
	var buf bytes.Buffer
	var problems []string
	for _, actor := range actors {
		objs, err := h.Render(actor)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, obj := range objs {
			doc, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			buf.WriteString("---\n")
			buf.Write(doc)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid actor:\n  %s", strings.Join(problems, "\n  "))
	}
	_, err := out.Write(buf.Bytes())
	return err
}

// readActors reads every AsyncActor document of a YAML stream strictly,
// merging in the flavors (EnvironmentConfigs) the stream holds.
func readActors(path string) ([]*v1alpha1.AsyncActor, error) {
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	docs, flavors, err := splitStream(path, data)
	if err != nil {
		return nil, err
	}
	var actors []*v1alpha1.AsyncActor
	for _, d := range docs {
		actor, err := decodeActor(d.data, flavors)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, d.index, err)
		}
		actors = append(actors, actor)
	}
	if len(actors) == 0 {
		return nil, fmt.Errorf("%s: no AsyncActor documents", path)
	}
	return actors, nil
}

type document struct {
	index int
	data  []byte
}

// splitStream returns a stream's actor documents and its flavors.
func splitStream(path string, data []byte) ([]document, flavor.Found, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []document
	flavors := flavor.Found{}
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if err == io.EOF {
			return docs, flavors, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		switch err := yaml.Unmarshal(doc, &tm); {
		case err == nil && tm.Kind == flavor.Kind && tm.APIVersion == flavor.APIVersion:
			var ec struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Data     json.RawMessage   `json:"data"`
			}
			if err := yaml.Unmarshal(doc, &ec); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			flavors[ec.Metadata.Name] = ec.Data
		case isActor(tm, err):
			docs = append(docs, document{i, doc})
		}
	}
}

// isActor: a manifest stream applied with kubectl often carries other
// objects beside its actors (an example's handler ConfigMap); render skips
// them. An AsyncActor of the wrong apiVersion is still an actor, and an
// error, and so is a document that does not parse (decodeActor says why).
func isActor(tm metav1.TypeMeta, parseErr error) bool {
	return parseErr != nil || tm.Kind == "AsyncActor" || tm.Kind == ""
}

// decodeActor reads an actor a person wrote: a misspelled field is an
// error, not ignored. The checked document then goes through the hooks'
// own decode step, with the flavors the stream holds.
func decodeActor(doc []byte, flavors flavor.Found) (*v1alpha1.AsyncActor, error) {
	if err := yaml.UnmarshalStrict(doc, &v1alpha1.AsyncActor{}); err != nil {
		return nil, err
	}
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	actor, specErr, err := hook.DecodeParent(raw, flavors)
	if err = errors.Join(err, specErr); err != nil {
		return nil, err
	}
	if actor.Namespace == "" {
		actor.Namespace = "default"
	}
	return actor, nil
}

func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}
