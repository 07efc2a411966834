package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// maxListBytes bounds the List file this binary reads (the planner's own reader bounds it first).
const maxListBytes = 4 << 30

// listItem is one object of a kubectl List, decoded to its typed Go object when this control
// plane serves its kind.
type listItem struct {
	Index      int
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Object     runtime.Object // nil when the kind is not served here (a CRD such as PodGroup)
	// DerivedFrom says, for an object the loader made (Index -1), what it was made from.
	DerivedFrom string
}

// badListError is a List this binary cannot read at all (not JSON, not a List, an item that does
// not decode): it names the item.
type badListError struct{ msg string }

func (e *badListError) Error() string { return e.msg }

// readList reads a kubectl List (JSON) from path and decodes its items.
func readList(path string) ([]listItem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &badListError{fmt.Sprintf("%s: %v", path, err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxListBytes+1))
	if err != nil {
		return nil, &badListError{fmt.Sprintf("%s: %v", path, err)}
	}
	if len(data) > maxListBytes {
		return nil, &badListError{fmt.Sprintf("%s: larger than %d bytes", path, maxListBytes)}
	}
	return decodeList(data, path)
}

// decodeList decodes the List document's items; kinds the client-go scheme does not know are
// kept with a nil Object so the loader can count them as skipped.
func decodeList(data []byte, source string) ([]listItem, error) {
	var doc struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &badListError{fmt.Sprintf("%s: not a JSON List: %v", source, err)}
	}
	if !strings.HasSuffix(doc.Kind, "List") {
		return nil, &badListError{fmt.Sprintf("%s: kind is %q, expected a List (kubectl get ... -o json)", source, doc.Kind)}
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	items := make([]listItem, 0, len(doc.Items))
	for i, raw := range doc.Items {
		var head struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, &badListError{fmt.Sprintf("%s: items[%d]: %v", source, i, err)}
		}
		item := listItem{Index: i, APIVersion: head.APIVersion, Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name}
		if head.Kind == "" || head.APIVersion == "" {
			return nil, &badListError{fmt.Sprintf("%s: items[%d] (%s): apiVersion and kind are required", source, i, head.Metadata.Name)}
		}
		obj, _, err := decoder.Decode(raw, nil, nil)
		switch {
		case runtime.IsNotRegisteredError(err):
		case err != nil:
			return nil, &badListError{fmt.Sprintf("%s: items[%d] %s %s: %v", source, i, head.Kind, qualifiedName(item.Namespace, item.Name), err)}
		default:
			item.Object = obj
		}
		items = append(items, item)
	}
	return items, nil
}

// qualifiedName is namespace/name, or name alone for a cluster-scoped object.
func qualifiedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
