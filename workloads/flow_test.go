package workloads

import (
	"reflect"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func TestExplicit_RenumbersAndCopies(t *testing.T) {
	in := []Flow{
		{ID: 42, Src: 0, Dst: 1, Size: 1000, Start: 0},
		{ID: 7, Src: 127, Dst: 3, Size: 1, Start: 5 * sim.Microsecond},
	}
	got, err := Explicit(in, 128)
	if err != nil {
		t.Fatalf("Explicit: unexpected error %v", err)
	}
	want := []Flow{
		{ID: 0, Src: 0, Dst: 1, Size: 1000, Start: 0},
		{ID: 1, Src: 127, Dst: 3, Size: 1, Start: 5 * sim.Microsecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Explicit = %+v, want %+v", got, want)
	}
	if in[0].ID != 42 {
		t.Fatalf("Explicit changed its input: in[0].ID = %d, want 42", in[0].ID)
	}
}

func TestExplicit_Errors(t *testing.T) {
	ok := Flow{Src: 0, Dst: 1, Size: 1000}
	tests := []struct {
		name string
		bad  Flow
		want string
	}{
		{"dst out of range", Flow{Src: 1, Dst: 130, Size: 1}, "flows[3].dst: host 130 does not exist (fabric has 128 hosts)"},
		{"src out of range", Flow{Src: 128, Dst: 1, Size: 1}, "flows[3].src: host 128 does not exist (fabric has 128 hosts)"},
		{"negative src", Flow{Src: -1, Dst: 1, Size: 1}, "flows[3].src: host -1 does not exist (host indices start at 0)"},
		{"self", Flow{Src: 5, Dst: 5, Size: 1}, "flows[3]: src and dst are both host 5"},
		{"zero size", Flow{Src: 5, Dst: 6}, "flows[3].size: must be positive, got 0 bytes"},
		{"negative start", Flow{Src: 5, Dst: 6, Size: 1, Start: -3}, "flows[3].start: must not be negative, got -3ps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Explicit([]Flow{ok, ok, ok, tc.bad}, 128)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Explicit error = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Explicit(nil, 0); err == nil {
		t.Fatalf("Explicit(nil, 0): want an error for a fabric with no hosts, got nil")
	}
}
