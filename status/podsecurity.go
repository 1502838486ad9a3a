package status

import "strings"

// ReasonPodSecurity is the WorkloadReady reason when Pod Security admission
// refuses the workload's pods.
const ReasonPodSecurity = "PodSecurityViolation"

// podSecurityMarker starts the verdict of the API server's Pod Security
// admission in a refused create.
const podSecurityMarker = "violates PodSecurity "

// podSecurityRefusal recognises a failure to create pods that Pod Security
// admission refused and keeps just its verdict, which names every rule
// broken and the containers that break it. Other failures pass unchanged.
func podSecurityRefusal(f *WorkloadFailure) *WorkloadFailure {
	_, verdict, ok := strings.Cut(f.Message, podSecurityMarker)
	if !ok {
		return f
	}
	return &WorkloadFailure{Reason: ReasonPodSecurity, Message: "the API server refuses its pods: " + podSecurityMarker + verdict}
}
