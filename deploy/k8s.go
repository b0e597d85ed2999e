package deploy

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// K8s describes the Kubernetes manifests of one run (docs/deploy.md;
// `lockstep deploy k8s`): NATS with JetStream as a StatefulSet of one
// (`lockstep nats`), three coordinators as a StatefulSet with stable peer
// names behind a headless Service, the P nodes as an Indexed Job whose
// completion index is the partition, the scenario in a ConfigMap, the
// run's settings in another (an overlay points them at an external NATS),
// a per-run Secret for the NATS credentials, readiness probes on the
// metrics listener (/readyz: joined the run) and a PodDisruptionBudget
// that keeps a raft quorum.
type K8s struct {
	Scenario     string // the scenario file's text
	ScenarioName string // its file name in the ConfigMap (default scenario.yaml)
	Partitions   int
	Seed         uint64 // 0: the scenario's
	Image        string // default lockstep:dev
	Run          string // run id (default: lockstep)
	PeerTimeout  string // default 20s
	// Token is the run's NATS token, in the Secret lockstep-credentials:
	// the NATS StatefulSet requires it of every client and every member
	// presents it ("": none, no authentication). lockstep deploy k8s
	// makes a random one per rendering.
	Token string
	// Resource requests of a node and of a coordinator.
	NodeCPU, NodeMemory   string
	CoordCPU, CoordMemory string
	// CheckpointEvery (a duration, "": none) makes the nodes checkpoint
	// into the NATS server's JetStream object store; with it the node Job
	// lets MaxRestarts pods fail (backoffLimit), each replaced by a pod
	// of the same completion index that rejoins the run (docs/deploy.md).
	CheckpointEvery string
	MaxRestarts     int
	// NATSPerNode runs NATS as a DaemonSet, a server on every Kubernetes
	// node joined into one NATS cluster by routes (found through the
	// headless Service nats-routes), and gives the Service nats
	// internalTrafficPolicy Local, so that every member connects to the
	// server on its own node: the per-window reports fan out from every
	// server instead of one (docs/deploy.md, "A NATS server per
	// machine"). JetStream is off (its cluster would need stable server
	// names), so checkpoints, which it stores, are refused with it.
	NATSPerNode bool
	// NodesServe has every node pod run the NATS server itself (`lockstep
	// node --serve`), joined to the others' by routes to their stable
	// names (nodes-I.nodes, the Indexed Job's host names under the
	// headless Service nodes): no NATS pod at all, and a node's reports
	// and batches go to its own server in process. The Service nats
	// reaches any node's server (ready or not: the nodes become ready
	// only once the coordinators, which connect there, have set them
	// up). No JetStream, so no checkpoints; not with NATSPerNode.
	NodesServe bool
}

// K8sFiles are the rendered manifests by file name, kustomization.yaml
// among them.
type K8sFiles map[string][]byte

var runIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Render renders the manifests.
func (k K8s) Render() (K8sFiles, error) {
	if k.Partitions < 1 {
		return nil, fmt.Errorf("deploy k8s: --partitions must be at least 1")
	}
	if k.ScenarioName == "" {
		k.ScenarioName = "scenario.yaml"
	}
	if k.Image == "" {
		k.Image = "lockstep:dev"
	}
	if k.Run == "" {
		k.Run = "lockstep"
	}
	if !runIDRE.MatchString(k.Run) || len(k.Run) > 40 {
		return nil, fmt.Errorf("deploy k8s: run id %q: want lower-case letters, digits and '-' (a DNS label, at most 40)", k.Run)
	}
	if k.PeerTimeout == "" {
		k.PeerTimeout = "20s"
	}
	if k.NATSPerNode && k.CheckpointEvery != "" {
		return nil, fmt.Errorf("deploy k8s: --nats-per-node has no JetStream to keep --checkpoint-every's parts in")
	}
	if k.NodesServe && k.CheckpointEvery != "" {
		return nil, fmt.Errorf("deploy k8s: --nodes-serve has no JetStream to keep --checkpoint-every's parts in")
	}
	if k.NodesServe && k.NATSPerNode {
		return nil, fmt.Errorf("deploy k8s: --nodes-serve and --nats-per-node: the nodes serve NATS themselves, or a server per Kubernetes node does, not both")
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&k.NodeCPU, "1")
	def(&k.NodeMemory, "1Gi")
	def(&k.CoordCPU, "250m")
	def(&k.CoordMemory, "256Mi")
	var peers []string
	for i := 0; i < 3; i++ {
		peers = append(peers, fmt.Sprintf("coord-%d=coord-%d.coord:7000", i, i))
	}
	var routes []string
	if k.NodesServe {
		for i := 0; i < k.Partitions; i++ {
			routes = append(routes, fmt.Sprintf("nats://nodes-%d.nodes:6222", i))
		}
	}
	data := struct {
		K8s
		Peers      string
		NodeRoutes string
		Indented   string
	}{k, strings.Join(peers, ","), strings.Join(routes, ","), indent(k.Scenario, "    ")}
	files := K8sFiles{}
	var names []string
	for name, text := range k8sTemplates {
		t, err := template.New(name).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("deploy k8s: %s: %w", name, err)
		}
		files[name] = b.Bytes()
		names = append(names, name)
	}
	sort.Strings(names)
	var kz bytes.Buffer
	kz.WriteString("# Rendered by `lockstep deploy k8s`; apply with `kubectl apply -k DIR`.\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, n := range names {
		fmt.Fprintf(&kz, "  - %s\n", n)
	}
	files["kustomization.yaml"] = kz.Bytes()
	return files, nil
}

// Stream is every manifest but kustomization.yaml as one multi-document
// YAML stream, in file-name order (`kubectl apply -f -`).
func (f K8sFiles) Stream() []byte {
	var names []string
	for n := range f {
		if n != "kustomization.yaml" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# %s\n", n)
		b.Write(f[n])
	}
	return b.Bytes()
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "\n")
}

// The labels every object carries; the selectors use the component.
const k8sLabels = `    app.kubernetes.io/name: lockstep
    app.kubernetes.io/instance: {{.Run}}`

var k8sTemplates = map[string]string{
	"config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: lockstep-run
  labels:
` + k8sLabels + `
data:
  # Every member reads these. An overlay can point LOCKSTEP_NATS_URL at
  # an existing NATS cluster (overlays/external-nats).
  LOCKSTEP_RUN: "{{.Run}}"
  LOCKSTEP_NATS_URL: "nats://nats:4222"
  LOCKSTEP_PEER_TIMEOUT: "{{.PeerTimeout}}"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: lockstep-scenario
  labels:
` + k8sLabels + `
data:
  {{.ScenarioName}}: |
{{.Indented}}
`,
	"secret.yaml": `# The run's NATS credentials. A token here (nats-token) is required by
# the NATS StatefulSet and presented by every member ($LOCKSTEP_NATS_TOKEN,
# never argv). 'lockstep deploy k8s' puts a random one here for every
# rendering; this base's is empty (no authentication): patch a token in
# from an overlay, or render the run with 'lockstep deploy k8s'.
apiVersion: v1
kind: Secret
metadata:
  name: lockstep-credentials
  labels:
` + k8sLabels + `
type: Opaque
stringData:
  nats-token: "{{.Token}}"
`,
	"nats.yaml": `apiVersion: v1
kind: Service
metadata:
  name: nats
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: nats
spec:
  selector:
    app.kubernetes.io/instance: {{.Run}}
{{- if .NodesServe}}
    # The nodes serve NATS themselves (nodes.yaml): any node's server, not
    # ready yet included (a node is ready once the coordinators, which
    # connect here, have set it up).
    app.kubernetes.io/component: node
  publishNotReadyAddresses: true
{{- else}}
    app.kubernetes.io/component: nats
{{- end}}
{{- if .NATSPerNode}}
  # Every member talks to the NATS server on its own node.
  internalTrafficPolicy: Local
{{- end}}
  ports:
    - name: client
      port: 4222
      targetPort: 4222
{{- if not .NodesServe}}
---
{{- if .NATSPerNode}}
# The servers find each other here: a route to nats-routes:6222 reaches
# another server (a server skips its own address), and the cluster's
# gossip gives it the rest. Published before the pods are ready.
apiVersion: v1
kind: Service
metadata:
  name: nats-routes
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: nats
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    app.kubernetes.io/instance: {{.Run}}
    app.kubernetes.io/component: nats
  ports:
    - name: routes
      port: 6222
      targetPort: 6222
---
# A NATS server on every node, joined by routes; no JetStream (the
# results go to the launcher over core NATS).
apiVersion: apps/v1
kind: DaemonSet
{{- else}}
apiVersion: apps/v1
kind: StatefulSet
{{- end}}
metadata:
  name: nats
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: nats
spec:
{{- if not .NATSPerNode}}
  serviceName: nats
  replicas: 1
{{- end}}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{.Run}}
      app.kubernetes.io/component: nats
  template:
    metadata:
      labels:
` + indent(k8sLabels, "    ") + `
        app.kubernetes.io/component: nats
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
      containers:
        - name: nats
          image: {{.Image}}
{{- if .NATSPerNode}}
          args: ["nats", "--addr", "0.0.0.0:4222", "--monitor", "0.0.0.0:8222", "--jetstream=false",
                 "--cluster", "0.0.0.0:6222", "--routes", "nats://nats-routes:6222", "--name", "$(POD_NAME)"]
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef: {fieldPath: metadata.name}
{{- else}}
          args: ["nats", "--addr", "0.0.0.0:4222", "--store", "/data", "--monitor", "0.0.0.0:8222"]
          env:
{{- end}}
            - name: LOCKSTEP_NATS_TOKEN
              valueFrom:
                secretKeyRef: {name: lockstep-credentials, key: nats-token, optional: true}
          ports:
            - {name: client, containerPort: 4222}
{{- if .NATSPerNode}}
            - {name: routes, containerPort: 6222}
{{- end}}
            - {name: monitor, containerPort: 8222}
          readinessProbe:
            httpGet: {path: /healthz, port: 8222}
            periodSeconds: 2
          resources:
            requests: {cpu: 250m, memory: 256Mi}
{{- if not .NATSPerNode}}
          volumeMounts:
            - {name: data, mountPath: /data}
      volumes:
        - name: data
          emptyDir: {}
{{- end}}
{{- end}}
`,
	"coordinator.yaml": `# Headless: coord-0.coord, coord-1.coord, coord-2.coord are the raft
# peers' stable names, published before the pods are ready (raft needs
# them to elect the leader that makes them ready).
apiVersion: v1
kind: Service
metadata:
  name: coord
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: coordinator
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    app.kubernetes.io/instance: {{.Run}}
    app.kubernetes.io/component: coordinator
  ports:
    - {name: raft, port: 7000}
    - {name: metrics, port: 9100}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: coord
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: coordinator
spec:
  serviceName: coord
  replicas: 3
  # All three at once: raft needs a quorum before any is ready.
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{.Run}}
      app.kubernetes.io/component: coordinator
  template:
    metadata:
      labels:
` + indent(k8sLabels, "    ") + `
        app.kubernetes.io/component: coordinator
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
      containers:
        - name: coordinator
          image: {{.Image}}
          args:
            - coordinator
            - /etc/lockstep/{{.ScenarioName}}
            - --partitions={{.Partitions}}{{if .Seed}}
            - --seed={{.Seed}}{{end}}
            - --nats=$(LOCKSTEP_NATS_URL)
            - --run=$(LOCKSTEP_RUN)
            - --peer-timeout=$(LOCKSTEP_PEER_TIMEOUT)
            - --id=$(POD_NAME)
            - --raft-addr=$(POD_IP):7000
            - --peers={{.Peers}}{{if .CheckpointEvery}}
            - --checkpoint-every={{.CheckpointEvery}}
            - --max-restarts={{.MaxRestarts}}{{end}}
            - --metrics=0.0.0.0:9100
          envFrom:
            - configMapRef: {name: lockstep-run}
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef: {fieldPath: metadata.name}
            - name: POD_IP
              valueFrom:
                fieldRef: {fieldPath: status.podIP}
            - name: LOCKSTEP_NATS_TOKEN
              valueFrom:
                secretKeyRef: {name: lockstep-credentials, key: nats-token, optional: true}
          ports:
            - {name: raft, containerPort: 7000}
            - {name: metrics, containerPort: 9100}
          readinessProbe:
            httpGet: {path: /readyz, port: 9100}
            periodSeconds: 2
          livenessProbe:
            httpGet: {path: /healthz, port: 9100}
            periodSeconds: 10
          resources:
            requests: {cpu: {{.CoordCPU}}, memory: {{.CoordMemory}}}
          volumeMounts:
            - {name: scenario, mountPath: /etc/lockstep, readOnly: true}
      volumes:
        - name: scenario
          configMap: {name: lockstep-scenario}
---
# Raft keeps going with 2 of 3: never evict more than one at a time.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: coord
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: coordinator
spec:
  minAvailable: 2
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{.Run}}
      app.kubernetes.io/component: coordinator
`,
	"nodes.yaml": `# One pod per partition: the completion index is the partition (the node
# reads JOB_COMPLETION_INDEX, which the Job controller sets).{{if .CheckpointEvery}} A node that
# dies is replaced by a pod of the same index, which asks the coordinators
# for the setup: every node rolls back to the last committed checkpoint
# and the run goes on (at most {{.MaxRestarts}} times).{{else}} A node
# that dies cannot rejoin the run it left (it fails), so no retries.{{end}}
{{- if .NodesServe}}
# Every node runs the NATS server too (--serve), with routes to the
# others' stable names: pod nodes-I (the Indexed Job's host name) under
# this headless Service, published before the pods are ready.
apiVersion: v1
kind: Service
metadata:
  name: nodes
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: node
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    app.kubernetes.io/instance: {{.Run}}
    app.kubernetes.io/component: node
  ports:
    - {name: routes, port: 6222}
---
{{- end}}
apiVersion: batch/v1
kind: Job
metadata:
  name: nodes
  labels:
` + k8sLabels + `
    app.kubernetes.io/component: node
spec:
  completionMode: Indexed
  completions: {{.Partitions}}
  parallelism: {{.Partitions}}
  backoffLimit: {{if .CheckpointEvery}}{{.MaxRestarts}}{{else}}0{{end}}
  template:
    metadata:
      labels:
` + indent(k8sLabels, "    ") + `
        app.kubernetes.io/component: node
    spec:
      restartPolicy: Never
{{- if .NodesServe}}
      subdomain: nodes
{{- end}}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
      containers:
        - name: node
          image: {{.Image}}
          args:
            - node
{{- if .NodesServe}}
            - --serve=0.0.0.0:4222
            - --cluster=0.0.0.0:6222
            - --routes={{.NodeRoutes}}
{{- else}}
            - --nats=$(LOCKSTEP_NATS_URL)
{{- end}}
            - --run=$(LOCKSTEP_RUN)
            - --peer-timeout=$(LOCKSTEP_PEER_TIMEOUT)
            - --metrics=0.0.0.0:9100
          envFrom:
            - configMapRef: {name: lockstep-run}
          env:
            - name: LOCKSTEP_NATS_TOKEN
              valueFrom:
                secretKeyRef: {name: lockstep-credentials, key: nats-token, optional: true}
          ports:
{{- if .NodesServe}}
            - {name: client, containerPort: 4222}
            - {name: routes, containerPort: 6222}
{{- end}}
            - {name: metrics, containerPort: 9100}
          readinessProbe:
            httpGet: {path: /readyz, port: 9100}
            periodSeconds: 2
          resources:
            requests: {cpu: {{.NodeCPU}}, memory: {{.NodeMemory}}}
`,
}
