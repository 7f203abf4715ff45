from django.urls import path  # noqa: F401

from leaderboard import views

app_name = "leaderboard"
urlpatterns: list = [
    path("", views.index, name="index"),
    path("problems/<int:pk>/", views.problem_detail, name="problem-detail"),
    path("llms/<int:pk>/", views.llm_detail, name="llm-detail"),
    path(f"static-plotly/plotly-{views.PLOTLY_VERSION}.min.js", views.plotly_js, name="plotly-js"),
]
