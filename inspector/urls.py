from django.urls import path

from inspector import views

app_name = "inspector"
urlpatterns: list = [
    path("<int:pk>/", views.kernel_detail, name="kernel-detail"),
    path("<int:pk>/result.json", views.kernel_result_json, name="kernel-result-json"),
]
