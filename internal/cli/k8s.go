package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/throng-io/throng/internal/runner"
)

// k8sOptions are the knobs of the Kubernetes manifests.
type k8sOptions struct {
	Name      string // prefix of every object: throng-SCENARIO-RUNID unless --name
	Namespace string
	Image     string
	Agents    int
	Port      int
	Scenario  string // the scenario's text, put in a ConfigMap
	File      string // its file name inside the ConfigMap
	Args      []string
	Secret    string // name of the Secret holding the token (key "token")
	TLSSecret string // name of a kubernetes.io/tls Secret with the agents' certificate, or ""
	// EnvSecrets are Secrets whose every key becomes an environment
	// variable of the agents and the controller (SMB_PASSWORD, ...).
	EnvSecrets []string
	// ResultsClaim is the PersistentVolumeClaim the controller writes the
	// result to; empty: the manifests create NAME-results of ResultsSize.
	ResultsClaim string
	ResultsSize  string
	// CPU and Memory are each agent's requests and limits (equal: the
	// Guaranteed QoS class, and whole CPUs pinned under the static CPU
	// manager), so that the client-bound verdict measures what the agent
	// was given.
	CPU, Memory string
}

// Claim is the name of the results' PersistentVolumeClaim.
func (o k8sOptions) Claim() string {
	if o.ResultsClaim != "" {
		return o.ResultsClaim
	}
	return o.Name + "-results"
}

// ResultPath is where the controller writes the result, on the claim.
func (o k8sOptions) ResultPath() string { return "/results/" + o.Name + ".json" }

func k8sCommand(prep *runner.Preparer, stdout io.Writer) *cobra.Command {
	o := k8sOptions{}
	cmd := &cobra.Command{
		Use:   "k8s SCENARIO.yaml|PRESET --agents N",
		Short: "Print Kubernetes manifests that run a scenario over N agents",
		Long: `Print the manifests that run a scenario on an existing Kubernetes cluster: a
ConfigMap with the scenario, a headless Service and a StatefulSet of N agents
(pod k runs segment k+1/N), a Job for the controller that waits for the agents
(up to 5 minutes), runs the scenario over them and prints the summary in its
log, and a PersistentVolumeClaim NAME-results (or --results-claim, one of
yours) on which the controller writes the result, /results/NAME.json. Every
name carries a fresh run id (throng-SCENARIO-ID, or --name), so the manifests
of each run apply next to those of the last; delete a run's objects with
kubectl delete all,cm,pvc -l app.kubernetes.io/instance=NAME.

The scenario is checked first: a bad one, or one whose target is the
embedded server (which the pods do not have), is refused as bad input (exit 2).

The shared token is not in the manifests: create its Secret first, from a file
of your own that holds a long random string:

  kubectl create secret generic throng-token --from-file=token=./token
  throng k8s my.yaml --agents 4 --image registry.example/throng:v1 | kubectl apply -f -

Other secrets (SMB_PASSWORD, broker and mail passwords) reach the agents and
the controller as environment variables from Secrets of yours, every key one
variable: --env-secret NAME (repeatable).

The agents serve TLS. By default each generates its certificate at start and
the controller trusts it by the token, whose proofs are bound to the TLS
session. With --tls-secret NAME, every agent serves the certificate of that
kubernetes.io/tls Secret and the controller pins it:

  kubectl create secret tls throng-agent-tls --cert=agent.crt --key=agent.key
  throng k8s my.yaml --agents 4 --tls-secret throng-agent-tls | kubectl apply -f -

Flags after -- are given to the controller's throng run (--target, --users, ...).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := loadScenarioWith(prep, args[0], nil)
			if err != nil {
				return err
			}
			if o.Agents < 1 || o.Agents > 1000 {
				return badInput(fmt.Errorf("--agents %d: want 1 to 1000", o.Agents))
			}
			if err := checkK8sRun(prep, args[0], args[1:]); err != nil {
				return err
			}
			if o.Name == "" {
				o.Name = "throng-" + dnsLabel(s.Name) + "-" + runID()
			} else if d := dnsLabel(o.Name); d != o.Name || len(o.Name) > 47 {
				return badInput(fmt.Errorf("--name %q: want lower-case letters, digits and '-', at most 47 characters", o.Name))
			}
			for _, q := range []struct{ flag, v string }{{"--cpu", o.CPU}, {"--memory", o.Memory}, {"--results-size", o.ResultsSize}} {
				if _, err := resource.ParseQuantity(q.v); err != nil {
					return badInput(fmt.Errorf("%s %q: not a Kubernetes quantity (like 2, 500m, 4Gi)", q.flag, q.v))
				}
			}
			o.Scenario, o.File, o.Args = string(s.Source), "scenario.yaml", args[1:]
			return writeK8s(stdout, o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Agents, "agents", 2, "number of agents")
	fl.StringVar(&o.Image, "image", "throng:latest", "container image holding the throng binary as its entrypoint-less /throng or on PATH")
	fl.StringVar(&o.Namespace, "namespace", "default", "namespace of every object")
	fl.StringVar(&o.Name, "name", "", "prefix of every object's name (default throng-SCENARIO-RUNID, new for each run)")
	fl.IntVar(&o.Port, "port", 7070, "agents' port")
	fl.StringVar(&o.Secret, "secret", "throng-token", "name of the Secret holding the shared token (key: token)")
	fl.StringArrayVar(&o.EnvSecrets, "env-secret", nil, "a Secret whose every key becomes an environment variable of the agents and the controller, like SMB_PASSWORD (repeatable)")
	fl.StringVar(&o.ResultsClaim, "results-claim", "", "an existing PersistentVolumeClaim the controller writes the result to (default: the manifests create NAME-results)")
	fl.StringVar(&o.ResultsSize, "results-size", "1Gi", "size of the NAME-results claim the manifests create")
	fl.StringVar(&o.CPU, "cpu", "2", "each agent's CPU request and limit (equal: whole CPUs are pinned under the static CPU manager)")
	fl.StringVar(&o.Memory, "memory", "2Gi", "each agent's memory request and limit")
	fl.StringVar(&o.TLSSecret, "tls-secret", "", "name of a kubernetes.io/tls Secret (tls.crt, tls.key) the agents serve and the controller pins; default: each agent generates its own")
	return cmd
}

// dnsLabel turns a name into a valid Kubernetes object name part.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	if out == "" {
		out = "run"
	}
	return out
}

// writeK8s prints the manifests.
func writeK8s(w io.Writer, o k8sOptions) error {
	var addrs []string
	for i := 0; i < o.Agents; i++ {
		addrs = append(addrs, fmt.Sprintf("%s-agent-%d.%s-agents.%s.svc:%d", o.Name, i, o.Name, o.Namespace, o.Port))
	}
	// The token reaches both sides as THRONG_TOKEN from its Secret: no
	// file whose mode the pod's user would have to own.
	args := []string{"run", "/scenario/" + o.File, "--agents", strings.Join(addrs, ","),
		"--agents-wait", "5m", "--out", o.ResultPath(), "--quiet"}
	agentArgs := []string{"agent", "--listen", "0.0.0.0:" + strconv.Itoa(o.Port), "--dir", "/results"}
	if o.TLSSecret != "" {
		agentArgs = append(agentArgs, "--tls-cert", "/tls/tls.crt", "--tls-key", "/tls/tls.key")
		args = append(args, "--agent-fingerprints", "/tls/tls.crt")
	}
	args = append(args, o.Args...)
	return k8sTemplate.Execute(w, map[string]any{
		"O": o, "Scenario": indent(o.Scenario, 4), "ControllerArgs": args, "AgentArgs": agentArgs,
	})
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

var k8sTemplate = template.Must(template.New("k8s").Funcs(template.FuncMap{"quote": strconv.Quote}).Parse(`# throng: {{.O.Agents}} agents and a controller for scenario {{.O.File}}.
# The token's Secret {{.O.Secret}} must exist first (key "token"); see throng k8s --help.
# The result: {{.O.ResultPath}} on the PersistentVolumeClaim {{.O.Claim}} (docs/distributed.md: fetching it).
# Delete this run's objects: kubectl -n {{.O.Namespace}} delete all,cm,pvc -l app.kubernetes.io/instance={{.O.Name}}
{{- if .O.TLSSecret}}
# The agents serve the certificate of the TLS Secret {{.O.TLSSecret}}, which the controller pins.
{{- else}}
# The agents serve TLS with certificates they generate; the controller trusts them by the token.
{{- end}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{.O.Name}}-scenario
  namespace: {{.O.Namespace}}
  labels: {app.kubernetes.io/name: throng, app.kubernetes.io/instance: {{.O.Name}}}
data:
  {{.O.File}}: |
{{.Scenario}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{.O.Name}}-agents
  namespace: {{.O.Namespace}}
  labels: {app.kubernetes.io/name: throng, app.kubernetes.io/instance: {{.O.Name}}}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app.kubernetes.io/name: throng, app.kubernetes.io/component: agent, app.kubernetes.io/instance: {{.O.Name}}}
  ports:
    - name: agent
      port: {{.O.Port}}
      targetPort: {{.O.Port}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{.O.Name}}-agent
  namespace: {{.O.Namespace}}
  labels: {app.kubernetes.io/name: throng, app.kubernetes.io/component: agent, app.kubernetes.io/instance: {{.O.Name}}}
spec:
  serviceName: {{.O.Name}}-agents
  replicas: {{.O.Agents}}
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app.kubernetes.io/name: throng, app.kubernetes.io/component: agent, app.kubernetes.io/instance: {{.O.Name}}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: throng, app.kubernetes.io/component: agent, app.kubernetes.io/instance: {{.O.Name}}}
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels: {app.kubernetes.io/component: agent, app.kubernetes.io/instance: {{.O.Name}}}
      containers:
        - name: agent
          image: {{quote .O.Image}}
          command: ["throng"]
          args: [{{range $i, $a := .AgentArgs}}{{if $i}}, {{end}}{{quote $a}}{{end}}]
          env:
            - name: THRONG_TOKEN
              valueFrom: {secretKeyRef: {name: {{.O.Secret}}, key: token}}
{{- if .O.EnvSecrets}}
          envFrom:
{{- range .O.EnvSecrets}}
            - secretRef: {name: {{quote .}}}
{{- end}}
{{- end}}
          resources:
            requests: {cpu: {{quote .O.CPU}}, memory: {{quote .O.Memory}}}
            limits: {cpu: {{quote .O.CPU}}, memory: {{quote .O.Memory}}}
          ports:
            - name: agent
              containerPort: {{.O.Port}}
          readinessProbe:
            tcpSocket: {port: {{.O.Port}}}
            periodSeconds: 2
          volumeMounts:
            - {name: results, mountPath: /results}
{{- if .O.TLSSecret}}
            - {name: tls, mountPath: /tls, readOnly: true}
{{- end}}
      volumes:
        - name: results
          emptyDir: {}
{{- if .O.TLSSecret}}
        - name: tls
          # 0400: the key readable by its owner only (the container's root).
          secret: {secretName: {{.O.TLSSecret}}, defaultMode: 256}
{{- end}}
---
{{- if not .O.ResultsClaim}}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{.O.Claim}}
  namespace: {{.O.Namespace}}
  labels: {app.kubernetes.io/name: throng, app.kubernetes.io/instance: {{.O.Name}}}
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: {{quote .O.ResultsSize}}}
---
{{- end}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{.O.Name}}-controller
  namespace: {{.O.Namespace}}
  labels: {app.kubernetes.io/name: throng, app.kubernetes.io/component: controller, app.kubernetes.io/instance: {{.O.Name}}}
spec:
  backoffLimit: 0
  # The finished Job goes a day later; its result stays on the claim.
  ttlSecondsAfterFinished: 86400
  template:
    metadata:
      labels: {app.kubernetes.io/name: throng, app.kubernetes.io/component: controller, app.kubernetes.io/instance: {{.O.Name}}}
    spec:
      restartPolicy: Never
      containers:
        - name: controller
          image: {{quote .O.Image}}
          command: ["throng"]
          args: [{{range $i, $a := .ControllerArgs}}{{if $i}}, {{end}}{{quote $a}}{{end}}]
          env:
            - name: THRONG_TOKEN
              valueFrom: {secretKeyRef: {name: {{.O.Secret}}, key: token}}
{{- if .O.EnvSecrets}}
          envFrom:
{{- range .O.EnvSecrets}}
            - secretRef: {name: {{quote .}}}
{{- end}}
{{- end}}
          # The controller only merges the agents' intervals: one core is plenty.
          resources:
            requests: {cpu: "1", memory: 1Gi}
            limits: {cpu: "1", memory: 1Gi}
          volumeMounts:
            - {name: scenario, mountPath: /scenario, readOnly: true}
            - {name: results, mountPath: /results}
{{- if .O.TLSSecret}}
            - {name: tls, mountPath: /tls, readOnly: true}
{{- end}}
      volumes:
        - name: scenario
          configMap: {name: {{.O.Name}}-scenario}
        - name: results
          persistentVolumeClaim: {claimName: {{.O.Claim}}}
{{- if .O.TLSSecret}}
        - name: tls
          # The certificate only, to pin: the controller never holds the key.
          secret: {secretName: {{.O.TLSSecret}}, items: [{key: tls.crt, path: tls.crt}]}
{{- end}}
`))

// checkK8sRun checks the run the controller will do before any manifest
// is printed: the scenario with the flags given after --, as `throng run`
// would read them, and a target the pods can reach (not the embedded
// server, which exists only inside a throng run's own process).
func checkK8sRun(prep *runner.Preparer, arg string, extra []string) error {
	cmd, f := runCommandFlags(prep, io.Discard, io.Discard)
	if err := cmd.ParseFlags(extra); err != nil {
		return badInput(fmt.Errorf("the flags after -- (for the controller's throng run): %w", err))
	}
	if rest := cmd.Flags().Args(); len(rest) > 0 {
		return badInput(fmt.Errorf("after -- only flags of throng run are given, not %q", rest[0]))
	}
	for _, fl := range []string{"out", "agents", "segment", "weights", "start-at"} {
		if cmd.Flags().Changed(fl) {
			return badInput(fmt.Errorf("--%s after --: the manifests set it themselves", fl))
		}
	}
	settings, err := runSettings(cmd, f)
	if err != nil {
		return err
	}
	src, err := readScenario(arg)
	if err != nil {
		return err
	}
	l, err := prep.Load(runner.Request{Source: src, Settings: settings})
	if err != nil {
		return exitOf(err)
	}
	if problems := l.Problems(); len(problems) > 0 {
		return badInput(problems)
	}
	if l.Scenario.Target == "embedded" {
		return badInput(errors.New(`the target is "embedded": the server inside a throng run exists only in its own process, which the agents' pods cannot reach; give the server's URL after --, like -- --target http://web.load.svc:80`))
	}
	return nil
}

// runID is a fresh id for a run's object names: 5 random characters of
// base 32 (25 bits), so the manifests of each run apply beside the last's.
func runID() string {
	return strings.ToLower(rand.Text()[:5])
}
