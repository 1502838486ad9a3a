package hook

import (
	"strings"
	"testing"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// TestScriptsReadWhenNeeded: an observed runtime script is kept as it
// came and reads as the script it encodes, the same when its bytes come
// again; a value that is no string is a malformed request, as when it was
// decoded at once.
func TestScriptsReadWhenNeeded(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`"import http.server\n\u00e9\"\u003c"`, "import http.server\n\u00e9\"<"},
		{`"# a script\n"`, "# a script\n"},
		{`""`, ""},
		{`null`, ""},
	} {
		want := asyaruntime.NewScript(tc.want)
		for range 2 { // the second time, as remembered
			req, err := DecodeSyncRequest(scriptRequest(tc.raw))
			if err != nil {
				t.Fatalf("%s: %v", tc.raw, err)
			}
			cm := Get(req.Children.ConfigMaps, "a-asya-runtime").Data.RuntimeScript.Read()
			tmpl := Get(req.Children.Deployments, "a").Spec.Template.Metadata.Annotations.RuntimeScript.Read()
			if cm != want || tmpl != want {
				t.Errorf("%s: read %+v and %+v, want %+v", tc.raw, cm, tmpl, want)
			}
		}
	}
	var absent Script
	if absent.Read() != (asyaruntime.Script{}) {
		t.Error("an absent script reads as more than nothing")
	}
	for _, raw := range []string{`1`, `{}`, `["x"]`, `true`} {
		if _, err := DecodeSyncRequest(scriptRequest(raw)); err == nil || !strings.Contains(err.Error(), "invalid request JSON") {
			t.Errorf("a script %s: %v, want a malformed request", raw, err)
		}
	}
}

// TestScriptsRememberedOutliveTheRequest: a script read is remembered by
// a copy of its bytes, not by the request's, whose buffer the next call
// fills with its own request.
func TestScriptsRememberedOutliveTheRequest(t *testing.T) {
	request := func(script string) []byte { return scriptRequest(`"` + script + `"`) }
	read := func(body []byte) asyaruntime.Script {
		req, err := DecodeSyncRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		return Get(req.Children.ConfigMaps, "a-asya-runtime").Data.RuntimeScript.Read()
	}
	body := request("# first, remembered")
	read(body)
	copy(body, request("# other, this time!")) // the buffer reused
	if got, want := read(request("# other, this time!")), asyaruntime.NewScript("# other, this time!"); got != want {
		t.Errorf("read %+v, want %+v", got, want)
	}
}

// scriptRequest is a sync request whose runtime ConfigMap and pod
// template both hold script, a JSON value.
func scriptRequest(script string) []byte {
	return []byte(`{"parent": {"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": {"name": "a", "namespace": "n"}, "spec": {}},
		"children": {"ConfigMap.v1": {"n/a-asya-runtime": {"metadata": {"name": "a-asya-runtime", "namespace": "n"}, "data": {"asya_runtime.py": ` + script + `}}},
			"Deployment.apps/v1": {"n/a": {"metadata": {"name": "a"}, "spec": {"template": {"metadata": {"annotations": {"asya.sh/runtime-script": ` + script + `}}}}}}}}`)
}
