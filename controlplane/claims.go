package main

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// restoreClaimStatuses gives each loaded ResourceClaim the allocation the List recorded, and its
// reservations for the loaded pods (by name, with their new uids): a pod bound with an allocated
// claim stays consistent for the scheduler's DynamicResources plugin. Reservations for pods the
// List lacks are dropped. The create cleared the status (the API server ignores it on create).
func (l *loader) restoreClaimStatuses(ctx context.Context, items []listItem) error {
	for _, item := range items {
		claim, ok := item.Object.(*resourcev1.ResourceClaim)
		if !ok || claim.Status.Allocation == nil {
			continue
		}
		current, err := l.client.ResourceV1().ResourceClaims(item.Namespace).Get(ctx, item.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = *claim.Status.DeepCopy()
		current.Status.ReservedFor = nil
		for _, ref := range claim.Status.ReservedFor {
			if ref.Resource != "pods" || ref.APIGroup != "" {
				continue
			}
			l.mu.Lock()
			uid, found := l.owners[ownerKey{"Pod", item.Namespace, ref.Name}]
			l.mu.Unlock()
			if found {
				ref.UID = uid
				current.Status.ReservedFor = append(current.Status.ReservedFor, ref)
			}
		}
		if _, err := l.client.ResourceV1().ResourceClaims(item.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{}); err != nil {
			return rejectionOf(item, err)
		}
	}
	return nil
}
