package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/testenv"
)

// The manifests are checked against the Kubernetes API's own types: every
// document decodes strictly (an unknown or misspelt field, a wrong type is
// an error), and what must agree agrees (selectors, volumes, addresses).
func TestK8sManifestsAreValid(t *testing.T) {
	var out bytes.Buffer
	code := Main([]string{"k8s", "web-static", "--agents", "3", "--namespace", "load", "--image", "registry.example/throng:v1",
		"--", "--target", "http://web.load.svc:80", "--users", "30"}, &out, &out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	docs := strings.Split(out.String(), "\n---\n")
	if len(docs) != 5 {
		t.Fatalf("%d documents", len(docs))
	}
	var cm corev1.ConfigMap
	var svc corev1.Service
	var sts appsv1.StatefulSet
	var pvc corev1.PersistentVolumeClaim
	var job batchv1.Job
	for i, obj := range []any{&cm, &svc, &sts, &pvc, &job} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), obj); err != nil {
			t.Fatalf("document %d does not fit its API type: %v\n%s", i, err, docs[i])
		}
	}
	if cm.Kind != "ConfigMap" || svc.Kind != "Service" || sts.Kind != "StatefulSet" || job.Kind != "Job" ||
		sts.APIVersion != "apps/v1" || job.APIVersion != "batch/v1" {
		t.Errorf("kinds %s %s %s/%s %s/%s", cm.Kind, svc.Kind, sts.APIVersion, sts.Kind, job.APIVersion, job.Kind)
	}
	for _, o := range []string{cm.Namespace, svc.Namespace, sts.Namespace, pvc.Namespace, job.Namespace} {
		if o != "load" {
			t.Errorf("namespace %q", o)
		}
	}
	// The scenario in the ConfigMap is the preset, intact.
	if _, err := scenario.Parse("cm", []byte(cm.Data["scenario.yaml"]), newPreparer().Names()); err != nil {
		t.Errorf("the ConfigMap's scenario does not parse: %v", err)
	}
	// Selectors select the pods they are meant to.
	match := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	podLabels := sts.Spec.Template.Labels
	if !match(sts.Spec.Selector.MatchLabels, podLabels) || !match(svc.Spec.Selector, podLabels) || match(svc.Spec.Selector, job.Spec.Template.Labels) {
		t.Error("selectors do not match the agents' pods (or match the controller)")
	}
	if *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != "None" {
		t.Errorf("replicas %d, serviceName %s vs %s, clusterIP %s", *sts.Spec.Replicas, sts.Spec.ServiceName, svc.Name, svc.Spec.ClusterIP)
	}
	// Every mount has its volume; the token comes from a Secret, not the manifest.
	for _, spec := range []corev1.PodSpec{sts.Spec.Template.Spec, job.Spec.Template.Spec} {
		vols := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			vols[v.Name] = v
		}
		for _, c := range spec.Containers {
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok {
					t.Errorf("container %s mounts %s, which is not a volume", c.Name, m.Name)
				}
			}
		}
		// The token comes from its Secret as THRONG_TOKEN.
		env := spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "THRONG_TOKEN" || env[0].ValueFrom == nil || env[0].ValueFrom.SecretKeyRef == nil ||
			env[0].ValueFrom.SecretKeyRef.Name != "throng-token" || env[0].ValueFrom.SecretKeyRef.Key != "token" {
			t.Errorf("token env %+v", env)
		}
	}
	// The controller addresses every agent by its stable name and passes the
	// extra flags through.
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	name := strings.TrimSuffix(cm.Name, "-scenario")
	if !regexp.MustCompile(`^throng-web-static-[2-7a-z]{5}$`).MatchString(name) {
		t.Errorf("name %q: want throng-web-static-RUNID", name)
	}
	for i := 0; i < 3; i++ {
		addr := fmt.Sprintf("%s-agent-%d.%s-agents.load.svc:7070", name, i, name)
		if !strings.Contains(args, addr) {
			t.Errorf("controller args lack %s: %s", addr, args)
		}
	}
	if !strings.Contains(args, "--target http://web.load.svc:80 --users 30") || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("controller args %s", args)
	}
	// The result goes to the claim the manifests create, under the run's name.
	if pvc.Kind != "PersistentVolumeClaim" || pvc.Name != name+"-results" || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim %s %s %v", pvc.Kind, pvc.Name, pvc.Spec.Resources.Requests)
	}
	var claim string
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "results" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != pvc.Name || !strings.Contains(args, "--out /results/"+name+".json") {
		t.Errorf("the controller writes to claim %q, args %s", claim, args)
	}
	// Agents get equal requests and limits (Guaranteed QoS: pinned CPUs).
	res := sts.Spec.Template.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "2" || !res.Requests.Cpu().Equal(*res.Limits.Cpu()) || !res.Requests.Memory().Equal(*res.Limits.Memory()) ||
		res.Limits.Memory().String() != "2Gi" {
		t.Errorf("agent resources %+v", res)
	}
	if job.Spec.TTLSecondsAfterFinished == nil {
		t.Error("the Job never goes")
	}
	if strings.Contains(out.String(), "token-abc") {
		t.Error("a token leaked into the manifests")
	}
}

// k8sDocs decodes the manifests of a throng k8s command line.
func k8sDocs(t *testing.T, args ...string) (corev1.ConfigMap, appsv1.StatefulSet, batchv1.Job) {
	t.Helper()
	var out bytes.Buffer
	if code := Main(append([]string{"k8s"}, args...), &out, &out); code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	docs := strings.Split(out.String(), "\n---\n")
	var cm corev1.ConfigMap
	var sts appsv1.StatefulSet
	var job batchv1.Job
	if len(docs) < 4 || yaml.UnmarshalStrict([]byte(docs[0]), &cm) != nil || yaml.UnmarshalStrict([]byte(docs[2]), &sts) != nil ||
		yaml.UnmarshalStrict([]byte(docs[len(docs)-1]), &job) != nil {
		t.Fatalf("manifests do not decode:\n%s", out.String())
	}
	return cm, sts, job
}

// With --tls-secret the agents mount the TLS Secret (key included, mode
// 0400) and serve it; the controller mounts only its certificate, and
// pins it.
func TestK8sTLSSecret(t *testing.T) {
	_, sts, job := k8sDocs(t, "web-static", "--agents", "2", "--tls-secret", "agent-tls", "--", "--target", "http://web:80")
	agent, ctl := sts.Spec.Template.Spec, job.Spec.Template.Spec
	args := strings.Join(agent.Containers[0].Args, " ")
	if !strings.Contains(args, "--tls-cert /tls/tls.crt --tls-key /tls/tls.key") {
		t.Errorf("agent args %s", args)
	}
	if args := strings.Join(ctl.Containers[0].Args, " "); !strings.Contains(args, "--agent-fingerprints /tls/tls.crt") {
		t.Errorf("controller args %s", args)
	}
	for _, spec := range []corev1.PodSpec{agent, ctl} {
		var tlsVol *corev1.Volume
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == "tls" {
				tlsVol = &spec.Volumes[i]
			}
		}
		if tlsVol == nil || tlsVol.Secret == nil || tlsVol.Secret.SecretName != "agent-tls" {
			t.Fatalf("tls volume %+v", tlsVol)
		}
		if spec.Containers[0].Name == "controller" {
			if it := tlsVol.Secret.Items; len(it) != 1 || it[0].Key != "tls.crt" {
				t.Errorf("the controller mounts %+v of the TLS Secret, want the certificate only", it)
			}
		} else if m := tlsVol.Secret.DefaultMode; m == nil || *m != 0o400 {
			t.Errorf("the agents' key mode %v, want 0400", m)
		}
	}
}

// The manifests' own command lines, run here: every agent pod as a process
// on a loopback port, the pod's paths mapped to temporary directories, the
// token given as the Secret gives it (THRONG_TOKEN), then the controller
// Job. Over TLS with certificates the agents generate, and with a TLS
// Secret made by the documented openssl command, pinned.
func TestK8sManifestsRunLocally(t *testing.T) {
	web := startServeWeb(t)
	const token = "k8s-test-token-0123456789abcdef"
	for _, tlsSecret := range []bool{false, true} {
		t.Run(map[bool]string{false: "generated", true: "tls-secret"}[tlsSecret], func(t *testing.T) {
			root := t.TempDir()
			args := []string{"web-static", "--agents", "2"}
			if tlsSecret {
				args = append(args, "--tls-secret", "throng-agent-tls")
				tlsDir := filepath.Join(root, "tls")
				os.MkdirAll(tlsDir, 0o700)
				ssl := testenv.RequireBinary(t, "openssl", "/usr/bin/openssl")
				cmd := exec.Command(ssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
					"-keyout", filepath.Join(tlsDir, "tls.key"), "-out", filepath.Join(tlsDir, "tls.crt"), "-days", "3650", "-subj", "/CN=throng-agent")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("openssl: %v\n%s", err, out)
				}
				os.Chmod(filepath.Join(tlsDir, "tls.key"), 0o400) // the volume's defaultMode
			}
			args = append(args, "--", "--target", web, "--users", "4", "--iterations", "200")
			cm, sts, job := k8sDocs(t, args...)
			os.MkdirAll(filepath.Join(root, "scenario"), 0o755)
			os.WriteFile(filepath.Join(root, "scenario", "scenario.yaml"), []byte(cm.Data["scenario.yaml"]), 0o644)
			// A pod's path under this test's directory.
			mapPath := func(pod, a string) string {
				for _, p := range []string{"/results", "/tls", "/scenario"} {
					if rest, ok := strings.CutPrefix(a, p); ok && (rest == "" || rest[0] == '/') {
						if p == "/results" {
							return filepath.Join(root, pod, "results") + rest
						}
						return filepath.Join(root, p[1:]) + rest
					}
				}
				return a
			}
			env := append(os.Environ(), "THRONG_TOKEN="+token)
			var addrs []string
			for i := range 2 {
				pod := fmt.Sprintf("agent-%d", i)
				var a []string
				for _, arg := range sts.Spec.Template.Spec.Containers[0].Args {
					if strings.HasPrefix(arg, "0.0.0.0:") {
						arg = "127.0.0.1:0"
					}
					a = append(a, mapPath(pod, arg))
				}
				log := &syncLog{}
				cmd := exec.Command(binary, a...)
				cmd.Env, cmd.Stderr = env, log
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				var addr string
				if !waitFor(10*time.Second, func() bool {
					_, rest, ok := strings.Cut(log.String(), "listening on ")
					addr, _, _ = strings.Cut(rest, " ")
					return ok && strings.Contains(log.String(), "throng agent: TLS certificate")
				}) {
					t.Fatalf("agent %d: %s", i, log)
				}
				if strings.Contains(log.String(), "warning") {
					t.Errorf("agent %d warns: %s", i, log)
				}
				addrs = append(addrs, addr)
			}
			ctlArgs := job.Spec.Template.Spec.Containers[0].Args
			var a []string
			for i, arg := range ctlArgs {
				if i > 0 && ctlArgs[i-1] == "--agents" {
					arg = strings.Join(addrs, ",")
				}
				a = append(a, mapPath("controller", arg))
			}
			os.MkdirAll(filepath.Join(root, "controller", "results"), 0o755)
			log := &syncLog{}
			cmd := exec.Command(binary, a...)
			cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
			if err := cmd.Run(); err != nil {
				t.Fatalf("controller %v: %v\n%s", a, err, log)
			}
			name := strings.TrimSuffix(cm.Name, "-scenario")
			run, err := result.ReadFile(filepath.Join(root, "controller", "results", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if tot := result.Find(run.Repetitions[0].Summaries, result.All).Total; tot.Count != 800 || tot.Errors != 0 || len(run.Agents) != 2 {
				t.Errorf("count %d errors %d agents %d", tot.Count, tot.Errors, len(run.Agents))
			}
			want := 2 // each agent trusted by the token
			if tlsSecret {
				want = 0 // pinned
			}
			if c := strings.Count(log.String(), "not pinned"); c != want {
				t.Errorf("%d agents not pinned, want %d:\n%s", c, want, log)
			}
		})
	}
}

// startServeWeb runs `throng serve web` on loopback for the test and
// returns its URL.
func startServeWeb(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(binary, "serve", "web", "--listen", "127.0.0.1:0")
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(pipe).ReadString('\n')
	f := strings.Fields(line) // serving web at http://127.0.0.1:PORT (pid N); ...
	if err != nil || len(f) < 4 {
		t.Fatalf("serve web: %q %v", line, err)
	}
	go io.Copy(io.Discard, pipe)
	return f[3]
}

// throng k8s refuses, before printing anything, what the Job could only
// fail at: an embedded target, a bad scenario value or flag after --, and
// flags the manifests set themselves. Each run gets names of its own;
// --results-claim uses the user's claim; --env-secret reaches both sides.
func TestK8sChecksAndNames(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"web-static"}, `target is "embedded"`},
		{[]string{"web-static", "--", "--users", "x"}, "--users"},
		{[]string{"web-static", "--", "--target", "http://web:80", "--out", "x.json"}, "--out after --"},
		{[]string{"web-static", "--", "--target", "http://web:80", "--bogus"}, "unknown flag"},
		{[]string{"web-static", "--cpu", "lots", "--", "--target", "http://web:80"}, "--cpu"},
		{[]string{"web-static", "--name", "Bad_Name", "--", "--target", "http://web:80"}, "--name"},
	} {
		var out, errw bytes.Buffer
		code := Main(append([]string{"k8s"}, c.args...), &out, &errw)
		if code != ExitBadInput || out.Len() != 0 || !strings.Contains(errw.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %s", c.args, code, out.Len(), errw.String())
		}
	}
	cm1, _, _ := k8sDocs(t, "web-static", "--", "--target", "http://web:80")
	cm2, _, _ := k8sDocs(t, "web-static", "--", "--target", "http://web:80")
	if cm1.Name == cm2.Name {
		t.Errorf("two runs share the name %s: the second apply would clash", cm1.Name)
	}
	var out bytes.Buffer
	if code := Main([]string{"k8s", "web-static", "--name", "nightly", "--results-claim", "mine", "--env-secret", "smb", "--env-secret", "mail",
		"--", "--target", "http://web:80"}, &out, &out); code != 0 {
		t.Fatalf("exit %d %s", code, out.String())
	}
	docs := strings.Split(out.String(), "\n---\n")
	var sts appsv1.StatefulSet
	var job batchv1.Job
	if len(docs) != 4 || yaml.UnmarshalStrict([]byte(docs[2]), &sts) != nil || yaml.UnmarshalStrict([]byte(docs[3]), &job) != nil {
		t.Fatalf("with --results-claim, no claim is created: %d documents", len(docs))
	}
	if v := job.Spec.Template.Spec.Volumes; !slices.ContainsFunc(v, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "mine"
	}) {
		t.Errorf("controller volumes %+v", v)
	}
	for _, c := range []corev1.Container{sts.Spec.Template.Spec.Containers[0], job.Spec.Template.Spec.Containers[0]} {
		var names []string
		for _, e := range c.EnvFrom {
			names = append(names, e.SecretRef.Name)
		}
		if strings.Join(names, ",") != "smb,mail" {
			t.Errorf("%s envFrom %v", c.Name, names)
		}
	}
	if sts.Name != "nightly-agent" {
		t.Errorf("--name: %s", sts.Name)
	}
}
