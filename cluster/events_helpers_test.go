package cluster

import (
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listEvents lists the events.k8s.io/v1 Events of every namespace.
func listEvents(t *testing.T, h *Host) []eventsv1.Event {
	t.Helper()
	evs, err := h.kube.EventsV1().Events("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

var metavOpts = metav1.ListOptions{}
