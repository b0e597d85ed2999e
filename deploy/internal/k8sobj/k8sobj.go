// Package k8sobj decodes rendered Kubernetes manifests strictly into the
// k8s.io/api types, for the tests of `lockstep deploy k8s` and of the
// kustomize overlays (the binary never links it): an unknown field, a
// value of the wrong type, a duplicate key or an unknown kind is an error.
package k8sobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// Split cuts a multi-document YAML stream into its non-empty documents.
func Split(stream []byte) [][]byte {
	var docs [][]byte
	for _, d := range strings.Split("\n"+string(stream), "\n---") {
		d = strings.TrimPrefix(d, "\n")
		if i := strings.IndexByte(d, '\n'); i >= 0 && strings.TrimSpace(d[:i]) == "" {
			d = d[i+1:]
		}
		empty := true
		for _, l := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
			}
		}
		if !empty {
			docs = append(docs, []byte(d+"\n"))
		}
	}
	return docs
}

// New returns an empty object of the type apiVersion/kind names.
func New(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	}
	return nil, fmt.Errorf("unknown kind %s %s", apiVersion, kind)
}

// Decode decodes one document strictly into its k8s.io/api type.
func Decode(doc []byte) (any, error) {
	js, err := yaml.YAMLToJSONStrict(doc) // duplicate keys are errors
	if err != nil {
		return nil, err
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	obj, err := New(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// DecodeAll decodes every document of a stream.
func DecodeAll(stream []byte) ([]any, error) {
	var objs []any
	for i, d := range Split(stream) {
		o, err := Decode(d)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}
