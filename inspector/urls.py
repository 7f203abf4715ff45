from django.urls import path  # noqa: F401

app_name = "inspector"
urlpatterns: list = []
