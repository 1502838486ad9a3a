package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// resyncAfter is the soonest of: the next retry after an error, the next
// look at KEDA, and the moment a time window (pod start, Degraded) closes.
func (o *observation) resyncAfter(st *v1alpha1.AsyncActorStatus) time.Duration {
	var next soonest
	next.add(o.backoff(st, ConditionTransportReady))
	if isWorkloadError(st.Status) {
		next.add(o.backoff(st, ConditionWorkloadReady))
	}
	if st.Status == ScalingError {
		next.add(o.backoff(st, ConditionScalingReady))
	}
	next.add(o.scaling.poll)
	next.add(o.pods.startDeadline)
	if left, short := o.degradedIn(); short && left > 0 {
		next.add(left)
	}
	return next.d
}

// backoff retries a failing condition after as long as it has been
// failing, between MinBackoff and MaxBackoff: 5 s, 5 s, 10 s, 20 s, ...
// It doubles like a counter would, but is read off the condition's
// lastTransitionTime, which is part of the status itself.
func (o *observation) backoff(st *v1alpha1.AsyncActorStatus, t string) time.Duration {
	c := meta.FindStatusCondition(st.Conditions, t)
	if c == nil || c.Status != metav1.ConditionFalse {
		return 0
	}
	return min(max(o.in.Now.Sub(c.LastTransitionTime.Time), MinBackoff), MaxBackoff)
}

// soonest keeps the smallest positive duration added.
type soonest struct{ d time.Duration }

func (s *soonest) add(d time.Duration) {
	if d > 0 && (s.d == 0 || d < s.d) {
		s.d = d
	}
}
