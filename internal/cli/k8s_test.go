package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/throng-io/throng/internal/scenario"
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
	if len(docs) != 4 {
		t.Fatalf("%d documents", len(docs))
	}
	var cm corev1.ConfigMap
	var svc corev1.Service
	var sts appsv1.StatefulSet
	var job batchv1.Job
	for i, obj := range []any{&cm, &svc, &sts, &job} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), obj); err != nil {
			t.Fatalf("document %d does not fit its API type: %v\n%s", i, err, docs[i])
		}
	}
	if cm.Kind != "ConfigMap" || svc.Kind != "Service" || sts.Kind != "StatefulSet" || job.Kind != "Job" ||
		sts.APIVersion != "apps/v1" || job.APIVersion != "batch/v1" {
		t.Errorf("kinds %s %s %s/%s %s/%s", cm.Kind, svc.Kind, sts.APIVersion, sts.Kind, job.APIVersion, job.Kind)
	}
	for _, o := range []string{cm.Namespace, svc.Namespace, sts.Namespace, job.Namespace} {
		if o != "load" {
			t.Errorf("namespace %q", o)
		}
	}
	// The scenario in the ConfigMap is the preset, intact.
	if _, err := scenario.Parse("cm", []byte(cm.Data["scenario.yaml"]), familyNames()); err != nil {
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
		if vols["token"].Secret == nil || vols["token"].Secret.SecretName != "throng-token" {
			t.Errorf("token volume %+v", vols["token"])
		}
	}
	// The controller addresses every agent by its stable name and passes the
	// extra flags through.
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	for i := 0; i < 3; i++ {
		addr := fmt.Sprintf("throng-web-static-agent-%d.throng-web-static-agents.load.svc:7070", i)
		if !strings.Contains(args, addr) {
			t.Errorf("controller args lack %s: %s", addr, args)
		}
	}
	if !strings.Contains(args, "--target http://web.load.svc:80 --users 30") || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("controller args %s", args)
	}
	if strings.Contains(out.String(), "token-abc") {
		t.Error("a token leaked into the manifests")
	}
}
