package status

import (
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

const (
	cTrue    = metav1.ConditionTrue
	cFalse   = metav1.ConditionFalse
	noResync = time.Duration(-1)
)

type statusCase struct {
	name string
	in   func(t *testing.T) Input
	// status is the expected status value.
	status string
	conds  []wantCond
	// noScaling: the ScalingReady condition must be absent.
	noScaling bool
	// counts, when set, is the expected counts(st).
	counts string
	// resync, when set, is the expected ResyncAfter; noResync means 0.
	resync time.Duration
}

// runningTwo is a settled two-replica Deployment with its pods.
func runningTwo(t *testing.T) Input {
	in := input()
	in.Actor.Spec.Workload.Replicas = ptr(int32(2))
	in.Workload = deployment(2, 2)
	in.Pods = pods(t, "running", "running@echo-6f7c9d8b5-a1b2c")
	return in
}

// onePod is a one-replica Deployment whose only pod is fixture.
func onePod(fixture string) func(t *testing.T) Input {
	return func(t *testing.T) Input {
		in := input()
		in.Workload = deployment(0, 1)
		in.Pods = pods(t, fixture)
		return in
	}
}

var statusCases = []statusCase{
	// Level 1.
	{
		name: "terminating keeps what was last known of the workload",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			first := Compute(in).Status
			in = withStatus(t, in, first)
			in.Actor.DeletionTimestamp = ptr(mtime("03:19:00"))
			in.Workload, in.Pods = nil, nil
			return in
		},
		status: Terminating,
		conds: []wantCond{
			condIs(ConditionTransportReady, cTrue, "QueueReleased"),
			condIs(ConditionWorkloadReady, cFalse, "Terminating", "being deleted"),
		},
		counts: "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
		resync: noResync,
	},
	{
		name: "terminating while the queue cannot be deleted",
		in: func(*testing.T) Input {
			in := input()
			in.Actor.DeletionTimestamp = ptr(mtime("03:19:00"))
			in.Queue = QueueState{Reason: "BrokerUnavailable", Message: "deleting queue asya-echo: BrokerUnavailable: dial tcp 10.96.12.7:5672: connect: connection refused"}
			return in
		},
		status: Terminating,
		conds:  []wantCond{condIs(ConditionTransportReady, cFalse, "BrokerUnavailable", "deleting queue asya-echo", "connection refused")},
		resync: MinBackoff,
	},
	{
		name:   "creating: the workload is not observed yet",
		in:     func(*testing.T) Input { return input() },
		status: Creating,
		conds: []wantCond{
			condIs(ConditionTransportReady, cTrue, "QueueReady", `transport "rabbitmq" is ready`),
			condIs(ConditionWorkloadReady, cFalse, "Creating", "Deployment echo is being created and has no pods yet"),
		},
		noScaling: true,
		counts:    "ready=0 total=0 pending=0 failing=0 desired=1 summary=0/0",
		resync:    noResync,
	},
	{
		name:   "creating with scaling waits for KEDA",
		in:     func(*testing.T) Input { return scaled(input()) },
		status: Creating,
		conds:  []wantCond{condIs(ConditionScalingReady, cFalse, "WaitingForKEDA", "ScaledObject echo has not been created yet")},
		counts: "ready=0 total=0 pending=0 failing=0 desired=nil summary=0/0",
		resync: KEDAPollInterval,
	},

	// Transport.
	{
		name: "transport not configured",
		in: func(*testing.T) Input {
			in := input()
			in.Queue = QueueState{Reason: "TransportNotFound", Message: `spec.transport: transport "rabbit" is not configured (configured: [rabbitmq sqs])`}
			return in
		},
		status: TransportError,
		conds:  []wantCond{condIs(ConditionTransportReady, cFalse, "TransportNotFound", `transport "rabbit" is not configured`)},
		resync: MinBackoff,
	},
	{
		name: "broker down while the workload runs",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Queue = QueueState{Reason: "BrokerUnavailable", Message: `transport "rabbitmq" has no open broker connection`}
			return in
		},
		status: TransportError,
		conds: []wantCond{
			condIs(ConditionTransportReady, cFalse, "BrokerUnavailable", "no open broker connection"),
			condIs(ConditionWorkloadReady, cTrue, "AllReplicasReady", "Deployment echo: 2/2 replicas ready"),
		},
		counts: "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
	},
	{
		name: "queue deleted recently",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Queue = QueueState{Reason: "QueueDeletedRecently", Message: "QueueDeletedRecently: queue asya-echo was deleted less than 60 seconds ago"}
			return in
		},
		status: TransportError,
		conds:  []wantCond{condIs(ConditionTransportReady, cFalse, "QueueDeletedRecently", "less than 60 seconds")},
	},

	// Spec and configuration.
	{
		name: "invalid spec",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.SpecProblems = []string{"spec.workload.template.spec.containers[0] (asya-runtime): command must not be set; the runtime script is the command"}
			return in
		},
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "InvalidSpec", "invalid spec, not applied: ", "containers[0] (asya-runtime): command must not be set")},
		counts: "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
	},
	{
		name: "invalid spec comes before what the pods of the last valid spec show",
		in: func(t *testing.T) Input {
			in := onePod("runtime-crashloop")(t)
			in.SpecProblems = []string{"spec.workload.template.spec.containers: no container named asya-runtime", "spec.workload.template.spec.initContainers[0]: asya-sidecar is reserved"}
			return in
		},
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "InvalidSpec", "no container named asya-runtime; spec.workload.template.spec.initContainers[0]")},
		counts: "ready=0 total=1 pending=1 failing=1 desired=1 summary=0/1",
	},
	{
		name: "invalid spec before the workload exists",
		in: func(*testing.T) Input {
			in := input()
			in.SpecProblems = []string{"spec: required"}
			return in
		},
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "InvalidSpec", "spec: required")},
	},
	{
		name: "referenced Secret missing",
		in: func(*testing.T) Input {
			in := input()
			in.MissingSecrets = []string{"rabbitmq-secret"}
			return in
		},
		status: ConfigError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "SecretNotFound", `Secret "rabbitmq-secret" referenced by transport "rabbitmq" not found in namespace "default"`)},
		resync: MinBackoff,
	},

	// Pods.
	{
		name:   "image pull back-off",
		in:     onePod("image-pull-backoff"),
		status: ImagePullError,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "ImagePullBackOff",
			`pod echo-6f7c9d8b5-q4m8n: container asya-runtime: Back-off pulling image "ghcr.io/acme/echo:1.2.1"`, "not found")},
		counts: "ready=0 total=1 pending=1 failing=1 desired=1 summary=0/1",
		resync: MinBackoff,
	},
	{
		name:   "image pull denied",
		in:     onePod("err-image-pull"),
		status: ImagePullError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "ErrImagePull", `"registry.acme.internal/ml/echo:1.2.0"`, "authorization failed")},
	},
	{
		name:   "invalid image name",
		in:     onePod("invalid-image-name"),
		status: ImagePullError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "InvalidImageName", "repository name (acme/Echo) must be lowercase")},
	},
	{
		name:   "init container image pull",
		in:     onePod("init-image-pull"),
		status: ImagePullError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "ImagePullBackOff", `pod echo-6f7c9d8b5-h8j3c: init container fetch-model: Back-off pulling image "ghcr.io/acme/model-fetcher:2.0"`)},
	},
	{
		name:   "runtime crash loop",
		in:     onePod("runtime-crashloop"),
		status: RuntimeError,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff",
			"pod echo-6f7c9d8b5-m5n7p: container asya-runtime keeps crashing: exit code 1 (Error): ModuleNotFoundError: No module named 'echo'")},
		counts: "ready=0 total=1 pending=1 failing=1 desired=1 summary=0/1",
	},
	{
		name:   "runtime killed for memory, again and again",
		in:     onePod("runtime-oomkilled"),
		status: RuntimeError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff", "container asya-runtime keeps crashing: exit code 137 (OOMKilled)")},
	},
	{
		name:   "sidecar crash loop",
		in:     onePod("sidecar-crashloop"),
		status: SidecarError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff", "pod echo-6f7c9d8b5-p6w1z: container asya-sidecar keeps crashing: exit code 1 (Error)")},
	},
	{
		name:   "another container of the template crash-loops",
		in:     onePod("user-container-crashloop"),
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff", "container metrics-exporter keeps crashing: exit code 2 (Error)")},
	},
	{
		name:   "unschedulable for lack of CPU and memory",
		in:     onePod("unschedulable-insufficient"),
		status: PendingResources,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "Unschedulable",
			"pod echo-6f7c9d8b5-b7c2d cannot be scheduled: 0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory.")},
		counts: "ready=0 total=1 pending=1 failing=1 desired=1 summary=0/1",
	},
	{
		name:   "unschedulable for a taint",
		in:     onePod("unschedulable-taint"),
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "Unschedulable", "untolerated taint {dedicated: gpu}")},
	},
	{
		name:   "unschedulable for a missing PersistentVolumeClaim",
		in:     onePod("unschedulable-pvc"),
		status: VolumeError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "Unschedulable", `persistentvolumeclaim "model-cache" not found`)},
	},
	{
		name:   "subPath mount cannot be prepared",
		in:     onePod("subpath-config-error"),
		status: VolumeError,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "CreateContainerConfigError",
			`pod echo-6f7c9d8b5-n2m4q: container asya-runtime: failed to prepare subPath for volumeMount "asya-runtime"`)},
	},
	{
		name:   "sandbox not ready after the start timeout",
		in:     onePod("sandbox-not-ready"),
		status: VolumeError,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "ContainersNotStarted",
			"pod echo-6f7c9d8b5-s5d7f: containers not started 2m0s after scheduling", "volume")},
		counts: "ready=0 total=1 pending=1 failing=1 desired=1 summary=0/1",
	},
	{
		name: "sandbox not ready yet, within the start timeout",
		in: func(t *testing.T) Input {
			in := onePod("sandbox-not-ready")(t)
			in.Now = at("03:16:00")
			return in
		},
		status: Updating,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "NotAllReady", "Deployment echo: 0/1 replicas ready")},
		counts: "ready=0 total=1 pending=1 failing=0 desired=1 summary=0/1",
		resync: time.Minute,
	},
	{
		name: "volume mount failure reported in a pod condition",
		in: func(t *testing.T) Input {
			in := onePod("starting")(t)
			c := &in.Pods[0].Status.Conditions[0]
			c.Status, c.Reason, c.Message = "False", "FailedMount", `MountVolume.SetUp failed for volume "asya-runtime" : configmap "echo-asya-runtime" not found`
			return in
		},
		status: VolumeError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "FailedMount", `pod echo-6f7c9d8b5-g7h9j: MountVolume.SetUp failed for volume "asya-runtime"`)},
	},
	{
		name:   "Secret missing for the sidecar's environment",
		in:     onePod("secret-not-found"),
		status: ConfigError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CreateContainerConfigError", `pod echo-6f7c9d8b5-c6v8b: container asya-sidecar: secret "rabbitmq-secret" not found`)},
	},
	{
		name:   "key missing in a Secret",
		in:     onePod("secret-key-missing"),
		status: ConfigError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CreateContainerConfigError", "couldn't find key password in Secret default/rabbitmq-secret")},
	},
	{
		name:   "ConfigMap missing",
		in:     onePod("configmap-not-found"),
		status: ConfigError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CreateContainerConfigError", `configmap "echo-settings" not found`)},
	},
	{
		name:   "container cannot be started",
		in:     onePod("run-container-error"),
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "RunContainerError", `exec: "python3": executable file not found in $PATH`)},
	},
	{
		name:   "init container crash loop",
		in:     onePod("init-crashloop"),
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff", "pod echo-6f7c9d8b5-d4f6g: init container migrate keeps crashing: exit code 2 (Error)")},
	},
	{
		name:   "init container failed",
		in:     onePod("init-failed"),
		status: WorkloadError,
		conds: []wantCond{condIs(ConditionWorkloadReady, cFalse, "InitContainerFailed",
			`init container migrate failed: exit code 1 (Error): psycopg2.OperationalError: could not translate host name "postgres"`)},
	},
	{
		name: "the first failure in status order wins, and the others are counted",
		in: func(t *testing.T) Input {
			in := input()
			in.Actor.Spec.Workload.Replicas = ptr(int32(3))
			in.Workload = deployment(0, 3)
			in.Pods = pods(t, "sidecar-crashloop", "runtime-crashloop", "image-pull-backoff")
			return in
		},
		status: ImagePullError,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "ImagePullBackOff", "pod echo-6f7c9d8b5-q4m8n: container asya-runtime", "(and 2 more failing pods)")},
		counts: "ready=0 total=3 pending=3 failing=3 desired=3 summary=0/3",
	},
	{
		name: "pods being deleted and evicted pods do not count",
		in: func(t *testing.T) Input {
			in := input()
			in.Workload = deployment(1, 1)
			in.Pods = pods(t, "running", "terminating-crashloop", "evicted")
			return in
		},
		status: Running,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cTrue, "AllReplicasReady", "Deployment echo: 1/1 replicas ready")},
		counts: "ready=1 total=1 pending=0 failing=0 desired=1 summary=1/1",
		resync: noResync,
	},

	// Steady states.
	{
		name: "running",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Queue.Queued, in.Queue.Processing = ptr(int64(3)), ptr(int64(1))
			return in
		},
		status: Running,
		conds: []wantCond{
			condIs(ConditionTransportReady, cTrue, "QueueReady"),
			condIs(ConditionWorkloadReady, cTrue, "AllReplicasReady", "Deployment echo: 2/2 replicas ready"),
		},
		noScaling: true,
		counts:    "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
		resync:    noResync,
	},
	{
		name: "running as a StatefulSet",
		in: func(t *testing.T) Input {
			in := input()
			in.Actor.Spec.Workload.Kind = v1alpha1.KindStatefulSet
			w := deployment(1, 1)
			w.Kind = v1alpha1.KindStatefulSet
			in.Workload = w
			in.Pods = pods(t, "running@echo-0")
			return in
		},
		status: Running,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cTrue, "AllReplicasReady", "StatefulSet echo: 1/1 replicas ready")},
	},
	{
		name: "running with KEDA",
		in: func(t *testing.T) Input {
			in := keda(runningTwo(t), 2)
			in.Workload.DesiredReplicas = ptr(int32(2))
			return in
		},
		status: Running,
		conds: []wantCond{condIs(ConditionScalingReady, cTrue, "ScaledObjectReady",
			"ScaledObject echo is ready; KEDA scales Deployment echo through HorizontalPodAutoscaler keda-hpa-echo")},
		counts: "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
		resync: noResync,
	},

	// Scaling.
	{
		name: "KEDA not installed",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Actor.Spec.Scaling.Enabled = ptr(true)
			in.KEDAMissing = true
			return in
		},
		status: ScalingError,
		conds: []wantCond{condIs(ConditionScalingReady, cFalse, "KEDANotInstalled",
			"KEDA is not installed", "Deployment echo runs with spec.workload.replicas (2)")},
		counts: "ready=2 total=2 pending=0 failing=0 desired=2 summary=2/2",
		resync: MinBackoff,
	},
	{
		name: "KEDA rejects the ScaledObject",
		in: func(t *testing.T) Input {
			in := scaled(runningTwo(t))
			in.ScaledObject = scaledObject(
				kedaCond(kedav1alpha1.ConditionReady, cFalse, "ScaledObjectCheckFailed", "ScaledObject doesn't have correct scaleTargetRef specification"),
				kedaCond(kedav1alpha1.ConditionActive, metav1.ConditionUnknown, "UnknownState", "ScaledObject check failed"))
			return in
		},
		status: ScalingError,
		conds: []wantCond{condIs(ConditionScalingReady, cFalse, "ScaledObjectCheckFailed",
			"KEDA: ScaledObject echo is not ready: ScaledObject doesn't have correct scaleTargetRef specification")},
	},
	{
		name: "KEDA cannot read the queue",
		in: func(t *testing.T) Input {
			in := keda(runningTwo(t), 2)
			in.ScaledObject.Status.Conditions[0] = kedaCond(kedav1alpha1.ConditionReady, cFalse, "TriggerError",
				`error inspecting rabbitMQ: Exception (403) Reason: "username or password not allowed"`)
			return in
		},
		status: ScalingError,
		conds:  []wantCond{condIs(ConditionScalingReady, cFalse, "TriggerError", "username or password not allowed")},
	},
	{
		name: "waiting for KEDA to report",
		in: func(t *testing.T) Input {
			in := scaled(runningTwo(t))
			in.ScaledObject = scaledObject()
			in.ScaledObject.Status.HpaName = "" // not created yet
			return in
		},
		status: Running,
		conds:  []wantCond{condIs(ConditionScalingReady, cFalse, "WaitingForKEDA", "KEDA has not reported ScaledObject echo ready yet")},
		counts: "ready=2 total=2 pending=0 failing=0 desired=nil summary=2/2",
		resync: KEDAPollInterval,
	},
	{
		name: "waiting for KEDA's HPA",
		in: func(t *testing.T) Input {
			in := keda(runningTwo(t), 2)
			in.ScaledObject.Status.HpaName = ""
			return in
		},
		status: Running,
		conds:  []wantCond{condIs(ConditionScalingReady, cFalse, "WaitingForHPA", "HorizontalPodAutoscaler keda-hpa-echo")},
		resync: KEDAPollInterval,
	},
	{
		name: "KEDA silent past its grace period",
		in: func(t *testing.T) Input {
			in := scaled(runningTwo(t))
			in.ScaledObject = scaledObject()
			in.Actor.Status.Conditions = []metav1.Condition{{
				Type: ConditionScalingReady, Status: cFalse, Reason: "WaitingForKEDA", ObservedGeneration: 1,
				Message: "KEDA has not reported ScaledObject echo ready yet", LastTransitionTime: mtime("03:17:30"),
			}}
			return in
		},
		status: ScalingError,
		conds: []wantCond{condIs(ConditionScalingReady, cFalse, "KEDANotResponding",
			"KEDA has not reported ScaledObject echo ready yet after 2m0s; check that the KEDA operator is running")},
	},
	{
		name: "no ScaledObject while the spec is invalid",
		in: func(t *testing.T) Input {
			in := scaled(runningTwo(t))
			in.SpecProblems = []string{"spec.workload.template.spec.containers: no container named asya-runtime"}
			return in
		},
		status: WorkloadError,
		conds:  []wantCond{condIs(ConditionScalingReady, cFalse, "ScaledObjectNotCreated", "not created while the actor has errors")},
	},
	{
		name: "napping",
		in: func(*testing.T) Input {
			in := keda(input(), 0)
			in.Workload = deployment(0, 0)
			return in
		},
		status: Napping,
		conds: []wantCond{
			condIs(ConditionWorkloadReady, cTrue, "ScaledToZero", "Deployment echo is scaled to zero"),
			condIs(ConditionScalingReady, cTrue, "ScaledObjectReady"),
		},
		counts: "ready=0 total=0 pending=0 failing=0 desired=0 summary=0/0",
		resync: noResync,
	},
	{
		name: "scaling up: new pods starting",
		in: func(t *testing.T) Input {
			in := keda(input(), 3)
			in.Workload = deployment(1, 3)
			in.Pods = pods(t, "running", "starting", "starting@echo-6f7c9d8b5-g7h9k")
			return in
		},
		status: ScalingUp,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "NotAllReady", "Deployment echo: 1/3 replicas ready")},
		counts: "ready=1 total=3 pending=2 failing=0 desired=3 summary=1/3",
		resync: DegradedAfter - 20*time.Second,
	},
	{
		name: "scaling up from zero: KEDA woke the workload before the HPA",
		in: func(*testing.T) Input {
			in := keda(input(), 0)
			in.Workload = deployment(0, 0)
			in.Workload.DesiredReplicas = ptr(int32(1))
			return in
		},
		status: ScalingUp,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "WaitingForReplicas", "Deployment echo has 0 of 1 replicas")},
		counts: "ready=0 total=0 pending=0 failing=0 desired=1 summary=0/0",
	},
	{
		name: "scaling down",
		in: func(t *testing.T) Input {
			in := keda(input(), 1)
			in.Workload = deployment(3, 3)
			in.Workload.DesiredReplicas = ptr(int32(1))
			in.Pods = pods(t, "running", "running@echo-6f7c9d8b5-a1b2c", "running@echo-6f7c9d8b5-d3e4f")
			return in
		},
		status: ScalingDown,
		counts: "ready=3 total=3 pending=0 failing=0 desired=1 summary=3/3",
	},

	// Rollouts and Degraded.
	{
		name: "updating: the Deployment controller has not seen the new generation",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Workload.Generation = 2
			return in
		},
		status: Updating,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cTrue, "AllReplicasReady")},
	},
	{
		name: "updating: a surge pod of the new template is starting",
		in: func(t *testing.T) Input {
			in := keda(input(), 1)
			in.Workload = &Workload{Kind: "Deployment", Name: "echo", Generation: 2, ObservedGeneration: 2,
				DesiredReplicas: ptr(int32(1)), Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
			in.Pods = pods(t, "running@echo-5d4c3b2a1-x7k2p", "starting")
			return in
		},
		status: Updating,
		counts: "ready=1 total=2 pending=1 failing=0 desired=1 summary=1/2",
	},
	{
		name: "updating: the first pod is starting",
		in: func(t *testing.T) Input {
			in := onePod("starting")(t)
			return in
		},
		status: Updating,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "NotAllReady", "0/1 replicas ready")},
		resync: DegradedAfter - 20*time.Second,
	},
	{
		name: "degraded: a pod not ready for more than five minutes",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Workload = deployment(1, 2)
			in.Pods = pods(t, "running", "not-ready")
			return in
		},
		status: Degraded,
		conds:  []wantCond{condIs(ConditionWorkloadReady, cFalse, "NotAllReady", "1/2 replicas ready; pod echo-6f7c9d8b5-z2x4c is not ready: containers with unready status: [asya-runtime]")},
		counts: "ready=1 total=2 pending=1 failing=0 desired=2 summary=1/2",
		resync: noResync,
	},
	{
		name: "not degraded yet",
		in: func(t *testing.T) Input {
			in := runningTwo(t)
			in.Workload = deployment(1, 2)
			in.Pods = pods(t, "running", "not-ready")
			in.Now = at("03:12:00")
			return in
		},
		status: Updating,
		resync: 3*time.Minute + 5*time.Second,
	},
	{
		name: "a stuck scale-up is degraded",
		in: func(t *testing.T) Input {
			in := keda(input(), 2)
			in.Workload = deployment(1, 2)
			in.Pods = pods(t, "running", "not-ready")
			return in
		},
		status: Degraded,
		counts: "ready=1 total=2 pending=1 failing=0 desired=2 summary=1/2",
	},
}

func TestCompute(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute(tc.in(t))
			st := got.Status
			if st.Status != tc.status {
				t.Errorf("status = %s, want %s; conditions: %+v", st.Status, tc.status, st.Conditions)
			}
			for _, w := range tc.conds {
				checkCond(t, st.Conditions, w)
			}
			if tc.noScaling && len(st.Conditions) != 3 {
				t.Errorf("conditions = %+v, want TransportReady, WorkloadReady and Ready only", st.Conditions)
			}
			if tc.counts != "" && counts(st) != tc.counts {
				t.Errorf("counts:\n got %s\nwant %s", counts(st), tc.counts)
			}
			switch {
			case tc.resync == noResync && got.ResyncAfter != 0:
				t.Errorf("ResyncAfter = %s, want none", got.ResyncAfter)
			case tc.resync > 0 && got.ResyncAfter != tc.resync:
				t.Errorf("ResyncAfter = %s, want %s", got.ResyncAfter, tc.resync)
			}
		})
	}
}

func TestEveryStatusValueIsCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range statusCases {
		covered[tc.status] = true
	}
	for _, s := range []string{Terminating, Creating, TransportError, ImagePullError, RuntimeError, SidecarError,
		PendingResources, VolumeError, ConfigError, WorkloadError, ScalingError, Napping, ScalingUp, ScalingDown,
		Updating, Degraded, Running} {
		if !covered[s] {
			t.Errorf("no case for %s", s)
		}
	}
	if len(statusCases) < 30 {
		t.Errorf("%d cases", len(statusCases))
	}
}

// TestFixpoint: the status fed back, through JSON as Metacontroller stores
// it, gives the same status; so does a resync 30 s later with nothing
// changed. Only ResyncAfter may differ.
func TestFixpoint(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			first := Compute(in).Status
			again := withStatus(t, in, first)
			if diff := string(jsonOf(t, Compute(again).Status)); diff != string(jsonOf(t, first)) {
				t.Errorf("not a fixpoint:\nfirst  %s\nsecond %s", jsonOf(t, first), diff)
			}
			later := again
			later.Now = in.Now.Add(30 * time.Second)
			if got := string(jsonOf(t, Compute(later).Status)); got != string(jsonOf(t, first)) {
				t.Errorf("changed 30 s later:\nfirst %s\nlater %s", jsonOf(t, first), got)
			}
		})
	}
}

// TestInputNotModified: computing twice from one input gives the same, so
// Compute does not write into what it was given.
func TestInputNotModified(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			before := string(jsonOf(t, in.Actor))
			a, b := Compute(in), Compute(in)
			if string(jsonOf(t, a)) != string(jsonOf(t, b)) {
				t.Error("two computations differ")
			}
			if string(jsonOf(t, in.Actor)) != before {
				t.Error("the actor was modified")
			}
		})
	}
}
