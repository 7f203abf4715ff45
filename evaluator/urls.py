"""Staff audit pages and actions, mounted at /audit/ (namespace "evaluator")."""

from django.urls import path

from evaluator import views_profiles, views_review

app_name = "evaluator"
urlpatterns: list = [
    path("", views_review.review_queue_view, name="review-queue"),
    path("flags/<int:pk>/review/", views_review.flag_review_view, name="flag-review"),
    path("kernels/<int:pk>/audit/", views_review.kernel_audit_view, name="kernel-audit"),
    path("evaluations/<int:pk>/profile/", views_profiles.profile_request_view, name="profile-request"),
    path("profiles/<int:pk>/<str:name>", views_profiles.profile_download_view, name="profile-download"),
]
