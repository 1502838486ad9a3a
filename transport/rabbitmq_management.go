package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// managementQueue is the part of GET /api/queues/{vhost}/{name} we read.
// The broker leaves the counts out until it has collected statistics for
// a new queue, hence the pointers.
type managementQueue struct {
	Ready   *int64 `json:"messages_ready"`
	Unacked *int64 `json:"messages_unacknowledged"`
}

// managementCounts reads a queue's counts from the management HTTP API,
// with the service's own credentials.
func (r *RabbitMQ) managementCounts(ctx context.Context, queue string) (Counts, error) {
	endpoint := strings.TrimRight(r.cfg.ManagementURL, "/") + "/api/queues/" +
		url.PathEscape(r.cfg.VHost) + "/" + url.PathEscape(queue)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return Counts{}, &Error{Reason: ReasonQueueError, Message: "managementURL", Err: err}
	}
	password, err := r.password()
	if err != nil {
		return Counts{}, r.managementUnavailable(err)
	}
	req.SetBasicAuth(r.cfg.Username, password)
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return Counts{}, r.managementUnavailable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Counts{}, r.managementUnavailable(err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return Counts{}, &Error{Reason: ReasonQueueNotFound, Message: fmt.Sprintf("queue %s does not exist on %s", queue, r.address())}
	case resp.StatusCode != http.StatusOK:
		return Counts{}, &Error{Reason: ReasonQueueError, Message: fmt.Sprintf(
			"RabbitMQ management API at %s answered %s: %.200s", r.cfg.ManagementURL, resp.Status, body)}
	}
	var q managementQueue
	if err := json.Unmarshal(body, &q); err != nil {
		return Counts{}, &Error{Reason: ReasonQueueError, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
	}
	return Counts{Queued: q.Ready, Processing: q.Unacked}, nil
}

func (r *RabbitMQ) managementUnavailable(err error) *Error {
	return &Error{Reason: ReasonBrokerUnavailable, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
}
