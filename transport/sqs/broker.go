package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/asya-sh/asya-sync/transport"
)

// RecreateWait is how long to wait before re-creating a queue deleted
// less than 60 seconds ago, with a margin.
const RecreateWait = 65 * time.Second

// Attribute and tag names used on SQS queues.
const (
	attrVisibilityTimeout = string(types.QueueAttributeNameVisibilityTimeout)
	attrWaitTime          = string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds)
	attrRetention         = string(types.QueueAttributeNameMessageRetentionPeriod)
	attrRedrivePolicy     = string(types.QueueAttributeNameRedrivePolicy)
	attrQueueArn          = string(types.QueueAttributeNameQueueArn)
	attrReady             = string(types.QueueAttributeNameApproximateNumberOfMessages)
	attrInFlight          = string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)

	TagActor     = "asya.sh/actor"
	TagNamespace = "asya.sh/namespace"
	// TagOwner is the queue's owner record (docs/design.md#queues): the
	// claim (transport.Queue.Claim) of the first to create or adopt it.
	TagOwner = "asya.sh/owner"
)

// Broker manages actor queues on one SQS transport. Credentials come from
// the default AWS chain (environment, shared files, IRSA, instance roles).
type Broker struct {
	name   string
	cfg    Settings
	client *awssqs.Client
	urls   sync.Map // queue name → URL; a queue's URL never changes
}

// New builds the client of the transport called name; it makes no request.
func New(ctx context.Context, name string, cfg Settings, httpClient *http.Client) (*Broker, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Region)}
	if httpClient != nil {
		opts = append(opts, awsconfig.WithHTTPClient(httpClient))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	client := awssqs.NewFromConfig(awsCfg, func(o *awssqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Broker{name: name, cfg: cfg, client: client}, nil
}

// Ensure creates the queue (after its DLQ, when on), or updates the
// attributes and tags of one that exists and is the claim's. With
// autoCreate or manage off it only checks that the queue exists.
func (s *Broker) Ensure(ctx context.Context, q transport.Queue) error {
	if !s.cfg.Queues.AutoCreateQueues() {
		_, err := s.queueURL(ctx, q.Name())
		var te *transport.Error
		if errors.As(err, &te) && te.Reason == transport.ReasonQueueNotFound {
			te.Message = fmt.Sprintf("queue %s does not exist on %s and %s: create it", q.Name(), s.where(), s.cfg.Queues.NotCreatedBecause())
		}
		return err
	}
	attrs := s.queueAttributes(q)
	if dlq := s.cfg.Queues.DLQ; dlq.Enabled {
		// The queue's record first, so that nothing of another claim's is
		// touched, its DLQ included.
		if err := s.claimIfExists(ctx, q.Name(), q.Claim()); err != nil {
			return err
		}
		retention := map[string]string{attrRetention: strconv.Itoa(int(dlq.RetentionDays) * 24 * 3600)}
		url, err := s.createOrUpdate(ctx, q.DLQName(), "", retention, s.tags(q))
		if err != nil {
			return err
		}
		arn, err := s.queueARN(ctx, q.DLQName(), url)
		if err != nil {
			return err
		}
		attrs[attrRedrivePolicy] = redrivePolicy(arn, dlq.MaxRetryCount)
	}
	_, err := s.createOrUpdate(ctx, q.Name(), q.DLQName(), attrs, s.tags(q))
	return err
}

// queueAttributes are the main queue's attributes, without the DLQ.
func (s *Broker) queueAttributes(q transport.Queue) map[string]string {
	return map[string]string{
		attrVisibilityTimeout: strconv.Itoa(int(s.cfg.VisibilityTimeoutFor(q.ProcessingTimeout))),
		attrWaitTime:          strconv.Itoa(int(aws.ToInt32(s.cfg.WaitTimeSeconds))),
	}
}

// tags are the configured tags plus ours, which win.
func (s *Broker) tags(q transport.Queue) map[string]string {
	tags := maps.Clone(s.cfg.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[TagOwner] = q.Claim()
	tags[TagActor] = q.Actor
	if q.Namespace != "" {
		tags[TagNamespace] = q.Namespace
	}
	return tags
}

func redrivePolicy(dlqARN string, maxReceiveCount int32) string {
	policy, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": dlqARN,
		"maxReceiveCount":     strconv.Itoa(int(maxReceiveCount)),
	})
	return string(policy)
}

// createOrUpdate creates the queue, recorded to the claim of tags'
// TagOwner, or sets the attributes of one that exists with other values
// in place once it is the claim's: a queue is never deleted here. Tags are
// set either way, because CreateQueue ignores them on an existing queue.
// ownDLQ is the dead-letter queue asya-sync gives it when the DLQ is on
// ("" for a DLQ itself).
func (s *Broker) createOrUpdate(ctx context.Context, name, ownDLQ string, attrs, tags map[string]string) (string, error) {
	url, differs, err := s.create(ctx, name, attrs, tags)
	if err != nil {
		return "", err
	}
	if err := s.claim(ctx, name, url, tags[TagOwner]); err != nil {
		return "", err
	}
	if differs {
		updates := maps.Clone(attrs)
		if _, ok := updates[attrRedrivePolicy]; !ok && ownDLQ != "" {
			// The DLQ is off. A policy redriving to asya-sync's own DLQ is
			// stopped (the DLQ was turned off); one to any other queue was
			// set by someone else and is kept: upstream's compositions
			// redrive each actor's queue to the namespace's asya-<ns>-dlq,
			// and an adopted queue's failed messages must keep going there.
			target, err := s.redriveTarget(ctx, name, url)
			if err != nil {
				return "", err
			}
			if target == ownDLQ {
				updates[attrRedrivePolicy] = ""
			}
		}
		if _, err := s.client.SetQueueAttributes(ctx, &awssqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: updates}); err != nil {
			return "", s.explain(err, "updating the attributes of queue "+name)
		}
	}
	if _, err := s.client.TagQueue(ctx, &awssqs.TagQueueInput{QueueUrl: &url, Tags: tags}); err != nil {
		return "", s.explain(err, "tagging queue "+name)
	}
	return url, nil
}

// create creates the queue with its tags, or finds the one that exists;
// differs: it exists with other attributes.
func (s *Broker) create(ctx context.Context, name string, attrs, tags map[string]string) (url string, differs bool, err error) {
	out, err := s.client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: &name, Attributes: attrs, Tags: tags})
	if err == nil {
		s.urls.Store(name, aws.ToString(out.QueueUrl))
		return aws.ToString(out.QueueUrl), false, nil
	}
	if sqsErrorCode(err) != "QueueNameExists" {
		return "", false, s.explain(err, "creating queue "+name)
	}
	url, err = s.queueURL(ctx, name)
	return url, true, err
}

// claim makes sure the queue is the claim's: a queue created with its
// tags is; one without a record (created by someone else, or before
// records existed) is recorded to it now; one recorded to another claim
// is a *transport.Held error. SQS cannot tag a queue on a condition, so
// two claims adopting one queue at once both write their record: each
// reads it back, and the one whose record is gone sees the other.
func (s *Broker) claim(ctx context.Context, name, url, claim string) error {
	holder, err := s.holder(ctx, name, url)
	if err == nil && holder == "" {
		if _, err := s.client.TagQueue(ctx, &awssqs.TagQueueInput{QueueUrl: &url, Tags: map[string]string{TagOwner: claim}}); err != nil {
			return s.explain(err, "recording the owner of queue "+name)
		}
		holder, err = s.holder(ctx, name, url)
		if holder == "" { // tags may be read before the write shows
			holder = claim
		}
	}
	switch {
	case err != nil:
		return err
	case holder != claim:
		return transport.HeldError(name, holder)
	}
	return nil
}

// claimIfExists is claim of a queue that may not exist yet.
func (s *Broker) claimIfExists(ctx context.Context, name, claim string) error {
	url, err := s.queueURL(ctx, name)
	if err == nil {
		err = s.claim(ctx, name, url, claim)
	}
	if isNotFound(err) {
		s.urls.Delete(name)
		return nil
	}
	return err
}

// holder reads the queue's owner record: "" when it has none.
func (s *Broker) holder(ctx context.Context, name, url string) (string, error) {
	out, err := s.client.ListQueueTags(ctx, &awssqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		return "", s.explain(err, "reading the tags of queue "+name)
	}
	return out.Tags[TagOwner], nil
}

// redriveTarget is the name of the queue the queue's redrive policy sends
// failed messages to, "" without one.
func (s *Broker) redriveTarget(ctx context.Context, name, url string) (string, error) {
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		return "", s.explain(err, "reading the redrive policy of queue "+name)
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	// A policy that does not parse is not one asya-sync wrote: "" keeps it.
	_ = json.Unmarshal([]byte(out.Attributes[attrRedrivePolicy]), &policy)
	// An SQS ARN ends with the queue's name: arn:aws:sqs:<region>:<account>:<name>.
	return policy.Target[strings.LastIndex(policy.Target, ":")+1:], nil
}

func (s *Broker) queueARN(ctx context.Context, name, url string) (string, error) {
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", s.explain(err, "reading the ARN of queue "+name)
	}
	return out.Attributes[attrQueueArn], nil
}

// queueURL looks the URL up once per queue.
func (s *Broker) queueURL(ctx context.Context, name string) (string, error) {
	if url, ok := s.urls.Load(name); ok {
		return url.(string), nil
	}
	out, err := s.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return "", s.explain(err, "looking up queue "+name)
	}
	s.urls.Store(name, aws.ToString(out.QueueUrl))
	return aws.ToString(out.QueueUrl), nil
}

// Delete deletes the queue and its DLQ, messages and all, unless it is
// recorded to another claim: that queue is left as it is (for the queue,
// the error is then a *transport.Held). A queue without a record is
// deleted, as before records existed; a transport that does not create
// its queues records none, and deletes (asked to by the actor's deletion
// policy) without reading one.
func (s *Broker) Delete(ctx context.Context, q transport.Queue) error {
	return transport.DeleteClaimed(q, func(name string) error { return s.deleteQueue(ctx, name, q.Claim()) })
}

func (s *Broker) deleteQueue(ctx context.Context, name, claim string) error {
	url, err := s.queueURL(ctx, name)
	var holder string
	if err == nil && s.cfg.Queues.AutoCreateQueues() {
		holder, err = s.holder(ctx, name, url)
	}
	if isNotFound(err) {
		s.urls.Delete(name)
		return nil
	}
	switch {
	case err != nil:
		return err
	case holder != "" && holder != claim:
		return transport.HeldError(name, holder)
	}
	_, err = s.client.DeleteQueue(ctx, &awssqs.DeleteQueueInput{QueueUrl: &url})
	s.urls.Delete(name)
	if err != nil && sqsErrorCode(err) != "QueueDoesNotExist" {
		return s.explain(err, "deleting queue "+name)
	}
	return nil
}

// Counts reads the approximate visible and in-flight message counts.
func (s *Broker) Counts(ctx context.Context, q transport.Queue) (transport.Counts, error) {
	url, err := s.queueURL(ctx, q.Name())
	if err != nil {
		return transport.Counts{}, err
	}
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return transport.Counts{}, s.explain(err, "reading the counts of queue "+q.Name())
	}
	return transport.Counts{Queued: parseCount(out.Attributes[attrReady]), Processing: parseCount(out.Attributes[attrInFlight])}, nil
}

func parseCount(v string) *int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// Close has nothing to release: the SDK's HTTP connections are pooled.
func (s *Broker) Close() error { return nil }

func (s *Broker) where() string {
	if s.cfg.Endpoint != "" {
		return "SQS at " + s.cfg.Endpoint
	}
	return "SQS in " + s.cfg.Region
}

// explain turns an SDK error into a transport Error whose text is the
// same every time SQS answers the same way.
func (s *Broker) explain(err error, doing string) error {
	err = withoutRequestID(err)
	if code := sqsErrorCode(err); code == "QueueDoesNotExist" {
		return &transport.Error{Reason: transport.ReasonQueueNotFound, Message: doing + " on " + s.where(), Err: err}
	} else if code == "QueueDeletedRecently" {
		return &transport.Error{Reason: transport.ReasonQueueDeletedRecently, RetryAfter: RecreateWait, Err: err,
			Message: doing + " on " + s.where() + ": SQS allows re-creating a queue only 60 seconds after deleting it"}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return &transport.Error{Reason: transport.ReasonQueueError, Message: doing + " on " + s.where(), Err: err}
	}
	// No answer from SQS at all: network, credentials or deadline.
	return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: doing + " on " + s.where(), Err: err}
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.Reason == transport.ReasonQueueNotFound
}

// sqsErrorCode names an SQS error the same way whichever protocol (JSON or
// query) and error shape the endpoint used.
func sqsErrorCode(err error) string {
	var (
		deleted   *types.QueueDeletedRecently
		missing   *types.QueueDoesNotExist
		nameTaken *types.QueueNameExists
		apiErr    smithy.APIError
	)
	switch {
	case errors.As(err, &deleted):
		return "QueueDeletedRecently"
	case errors.As(err, &missing):
		return "QueueDoesNotExist"
	case errors.As(err, &nameTaken):
		return "QueueNameExists"
	case errors.As(err, &apiErr):
		code := apiErr.ErrorCode()
		code = code[strings.LastIndexAny(code, ".#")+1:]
		switch code {
		case "NonExistentQueue":
			return "QueueDoesNotExist"
		case "QueueAlreadyExists":
			return "QueueNameExists"
		}
		return code
	}
	return ""
}

// apiError is an SQS error told by its code and message alone: the SDK's
// own text carries a request ID that changes on every call, and a status
// message built from it would never settle.
type apiError struct{ smithy.APIError }

func (e apiError) Error() string { return e.ErrorCode() + ": " + e.ErrorMessage() }

func withoutRequestID(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return apiError{ae}
	}
	return err
}
