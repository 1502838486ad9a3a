package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The checks that run on the model every builder reads (the workload's
// pod template, the ScaledObject, the replicas) name what they find by
// the model's paths, as the nested shape writes them. A nested spec is
// the model; a flat spec was written into it by flatModel, so its user
// wrote none of those paths. FieldPath turns them back into the fields
// the user wrote, and says so plainly where the model holds what
// asya-sync adds itself.

// modelTemplate is the pod template in the model.
const modelTemplate = "spec.workload.template"

// FieldPath names where the user wrote what a message about the model's
// field at path concerns. parts, if any, are the paths below path that the
// problem is about (the entries that collide, the containers Pod Security
// refuses).
//
// A nested spec is the model: path is named as it is, whole. For a flat
// spec FieldPath names the flat field each part (or path, without parts)
// comes from, joined by ", " when they differ.
func (spec AsyncActorSpec) FieldPath(path string, parts ...string) string {
	if spec.AsyaGeneration != Flat {
		return path
	}
	if len(parts) == 0 {
		parts = []string{path}
	}
	var named []string
	for _, p := range parts {
		if n := spec.flatPath(p); !slices.Contains(named, n) {
			named = append(named, n)
		}
	}
	return strings.Join(named, ", ")
}

// flatPath is the flat field one path of the model comes from.
func (spec AsyncActorSpec) flatPath(path string) string {
	if rest, ok := cutField(path, modelTemplate); ok {
		if sub, ok := cutField(rest, ".spec"); ok {
			return spec.templatePath(sub)
		}
		return spec.templatePath(rest)
	}
	if rest, ok := cutField(path, "spec.scaling.advanced.triggers"); ok && len(spec.Scaling.AdditionalTriggers) > 0 {
		return "spec.scaling.additionalTriggers" + rest
	}
	if path == "spec.transport" && spec.Transport == "" {
		return "the service configuration's flatActors.transport (the actor names no spec.transport)"
	}
	for _, m := range renamedFields {
		if rest, ok := cutField(path, m.model); ok {
			return m.flat + rest
		}
	}
	return path // sidecar, scaling and transport are fields of both shapes
}

// renamedFields are the model's fields that flatModel writes from a flat
// field of another name.
var renamedFields = []struct{ model, flat string }{
	{"spec.workload.replicas", "spec.replicas"},
	{"spec.workload.pythonExecutable", "spec.pythonExecutable"},
	{"spec.timeout.processing", "spec.resiliency.actorTimeout"},
	{"spec.scaling.minReplicas", "spec.scaling.minReplicaCount"},
	{"spec.scaling.maxReplicas", "spec.scaling.maxReplicaCount"},
}

// podFields are the pod template's lists and maps that flatModel
// writes from the flat field of the same name. The runtime and the
// sidecar are containers asya-sync names, and refuses sidecars named
// asya-*: a list of the pod's containers is spec.sidecars.
var podFields = []struct{ model, flat string }{
	{".containers", "spec.sidecars"},
	{".initContainers", "spec.initContainers"},
	{".volumes", "spec.volumes"},
	{".tolerations", "spec.tolerations"},
	{".nodeSelector", "spec.nodeSelector"},
}

// templatePath is the flat field a path below the pod template's spec
// comes from (rest starts with "." or "[", or is empty): the runtime
// container is image, env, volumeMounts and resources; the other
// containers are sidecars and initContainers; the sidecar is spec.sidecar;
// the rest of the pods is asya-sync's.
func (spec AsyncActorSpec) templatePath(rest string) string {
	lists, _ := spec.CurrentSpec.Decoded() // what does not decode is refused by name before any template is built
	if name, sub, ok := cutSelector(rest, ".containers", "name"); ok {
		switch name {
		case RuntimeContainer:
			return spec.runtimePath(sub)
		case SidecarContainer:
			return spec.sidecarPath(sub)
		}
		return fmt.Sprintf("spec.sidecars[name=%s]%s", name, sub)
	}
	if name, sub, ok := cutSelector(rest, ".initContainers", "name"); ok {
		if !slices.ContainsFunc(lists.InitContainers, func(c corev1.Container) bool { return c.Name == name }) {
			return fmt.Sprintf("the init container %s, which asya-sync adds", name)
		}
		return fmt.Sprintf("spec.initContainers[name=%s]%s", name, sub)
	}
	if name, sub, ok := cutSelector(rest, ".volumes", "name"); ok {
		if !slices.ContainsFunc(lists.Volumes, func(v corev1.Volume) bool { return v.Name == name }) {
			return fmt.Sprintf("the volume %s, which asya-sync adds", name)
		}
		return fmt.Sprintf("spec.volumes[name=%s]%s", name, sub)
	}
	for _, m := range podFields {
		if sub, ok := cutField(rest, m.model); ok {
			return m.flat + sub
		}
	}
	if rest == "" {
		return "the pods, which asya-sync builds"
	}
	return fmt.Sprintf("the pods' %s, which asya-sync sets", strings.TrimPrefix(rest, "."))
}

// runtimePath is the flat field a path below the runtime container comes
// from.
func (spec AsyncActorSpec) runtimePath(sub string) string {
	if entry, ok := cutField(sub, ".env"); ok {
		return spec.runtimeEnvPath(entry)
	}
	for _, f := range []string{".volumeMounts", ".resources", ".image", ".imagePullPolicy"} {
		if _, ok := cutField(sub, f); ok {
			return "spec" + sub
		}
	}
	return fmt.Sprintf("the runtime container %s, which asya-sync builds", RuntimeContainer)
}

// runtimeEnvPath names where an entry of the runtime's environment comes
// from (entry is "" for the whole list, or "[name=X]"): spec.env, the
// variables of spec.secretRefs, and those asya-sync sets itself before
// them (runtimeEnv).
func (spec AsyncActorSpec) runtimeEnvPath(entry string) string {
	name, _, ok := cutSelector(entry, "", "name")
	if !ok {
		return "spec.env" + entry
	}
	c := spec.CurrentSpec
	var from []string // in the order runtimeEnv writes them
	switch name {
	case "ASYA_HANDLER":
		from = append(from, "the ASYA_HANDLER asya-sync sets from spec.handler")
	case "ASYA_ENABLE_VALIDATION": // two entries only where asya-sync sets it too
		from = append(from, "the ASYA_ENABLE_VALIDATION=false asya-sync sets for an actor that ends routes")
	}
	if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
		from = append(from, fmt.Sprintf("spec.env[name=%s]", name))
	}
	for _, ref := range c.SecretRefs {
		for _, k := range ref.Keys {
			if k.EnvVar == name {
				from = append(from, fmt.Sprintf("spec.secretRefs[secretName=%s].keys[envVar=%s]", ref.SecretName, name))
			}
		}
	}
	if len(from) == 0 {
		return "spec.env" + entry
	}
	return strings.Join(slices.Compact(from), " and ")
}

// sidecarPath is the flat field a path below the sidecar comes from:
// spec.sidecar's image, env and resources, and its securityContext if the
// actor sets one, else the service configuration's.
func (spec AsyncActorSpec) sidecarPath(sub string) string {
	for _, f := range []string{".env", ".resources", ".image", ".imagePullPolicy"} {
		if _, ok := cutField(sub, f); ok {
			return "spec.sidecar" + sub
		}
	}
	_, own := cutField(sub, ".securityContext")
	switch {
	case (own || sub == "") && spec.Sidecar.SecurityContext != nil:
		return "spec.sidecar.securityContext"
	case own || sub == "":
		return fmt.Sprintf("the sidecar %s, which asya-sync adds with the service configuration's sidecarSecurityContext", SidecarContainer)
	}
	return fmt.Sprintf("the sidecar %s, which asya-sync adds", SidecarContainer)
}

// cutField cuts the field path off the start of s, where it ends a field
// (s is path, or path followed by "." or "[").
func cutField(s, path string) (string, bool) {
	rest, ok := strings.CutPrefix(s, path)
	if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
		return "", false
	}
	return rest, true
}

// cutSelector cuts list[key=value] off the start of s, as
// internal/dynamicapply names an entry of a list merged by key.
func cutSelector(s, list, key string) (value, rest string, ok bool) {
	sel, ok := strings.CutPrefix(s, list+"["+key+"=")
	if !ok {
		return "", "", false
	}
	value, rest, ok = strings.Cut(sel, "]")
	return value, rest, ok
}
