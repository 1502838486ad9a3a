package jsonfields

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

type Inner struct {
	A string `json:"a,omitempty"`
}

type zeroByMethod struct{ N int }

func (z zeroByMethod) IsZero() bool { return z.N < 0 }

type zeroByPointerMethod struct{ N int }

func (z *zeroByPointerMethod) IsZero() bool { return z.N < 0 }

type sample struct {
	Inner                               // promoted
	metav1.TypeMeta `json:",inline"`    // promoted, as the API types embed it
	Untagged        int                 // its Go name
	Skipped         string              `json:"-"`
	Dash            string              `json:"-,"`
	hidden          string              //nolint:unused // unexported: never written
	Count           int                 `json:"count,omitempty"`
	Flag            bool                `json:"flag,omitempty"`
	Ptr             *int                `json:"ptr,omitempty"`
	List            []string            `json:"list,omitempty"`
	Map             map[string]string   `json:"map,omitempty"`
	Struct          Inner               `json:"struct,omitempty"` // never empty
	Time            metav1.Time         `json:"time,omitzero"`
	TimePtr         *metav1.Time        `json:"timePtr,omitzero"`
	Method          zeroByMethod        `json:"method,omitzero"`
	PointerMethod   zeroByPointerMethod `json:"pointerMethod,omitzero"`
	Duration        time.Duration       `json:"duration,omitzero"`
	Quantity        resource.Quantity   `json:"quantity,omitempty"`
	Limits          corev1.ResourceList `json:"limits,omitempty"`
	Any             any                 `json:"any,omitempty"`
	Always          string              `json:"always"`
}

// TestMembersAsEncodingJSONWritesThem: the members a value has are
// exactly those encoding/json writes for it, by the same names, empty and
// set alike.
func TestMembersAsEncodingJSONWritesThem(t *testing.T) {
	one := 1
	now := metav1.NewTime(time.Unix(1, 0))
	for name, v := range map[string]sample{
		"empty": {},
		"set": {Inner: Inner{A: "a"}, TypeMeta: metav1.TypeMeta{Kind: "K"}, Untagged: 1, Skipped: "s", Dash: "d", hidden: "h",
			Count: 1, Flag: true, Ptr: &one, List: []string{"x"}, Map: map[string]string{"k": "v"}, Time: now, TimePtr: &now,
			Method: zeroByMethod{N: 1}, Duration: time.Second, Quantity: resource.MustParse("1"),
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Any: 0},
		"zero by its method, though not the zero value": {Method: zeroByMethod{N: -1}, PointerMethod: zeroByPointerMethod{N: -1}, Ptr: new(int), List: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(&v)
			if err != nil {
				t.Fatal(err)
			}
			var written map[string]json.RawMessage
			if err := json.Unmarshal(data, &written); err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(func(yield func(string) bool) {
				for k := range written {
					if !yield(k) {
						return
					}
				}
			})
			rv := reflect.ValueOf(&v).Elem()
			var got []string
			for _, f := range Of(rv.Type()).Fields {
				if _, ok := f.Value(rv); ok {
					got = append(got, f.Name)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("members (-encoding/json +Of):\n%s", diff)
			}
		})
	}
}

func TestMarshals(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{metav1.Time{}, true}, {resource.Quantity{}, true}, {sample{}, false}, {"", false}, {json.RawMessage{}, true},
	} {
		if got := Of(reflect.TypeOf(tc.v)).Marshals; got != tc.want {
			t.Errorf("Of(%T).Marshals = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// node holds itself, as JSON schema types do.
type node struct {
	Name string `json:"name"`
	Next *node  `json:"next,omitempty"`
}

// TestTypeHoldingItself: the fields of a type that holds itself are read
// once, without reading that type again.
func TestTypeHoldingItself(t *testing.T) {
	fields := Of(reflect.TypeFor[node]()).Fields
	var got []string
	for _, f := range fields {
		got = append(got, f.Name)
	}
	if want := []string{"name", "next"}; !slices.Equal(got, want) || !fields[1].Nested {
		t.Errorf("fields %v (next nested: %v), want %v with next nested", got, len(fields) > 1 && fields[1].Nested, want)
	}
}
