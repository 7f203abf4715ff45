from django.urls import path

from leaderboard import views, views_accounts, views_browse, views_dataset, views_submit, views_webhook

app_name = "leaderboard"
urlpatterns: list = [
    path("", views.index, name="index"),
    path("problems/", views_browse.problem_list, name="problem-list"),
    path("problems/<int:pk>/", views.problem_detail, name="problem-detail"),
    path("problems/<int:pk>/degenerate/", views.problem_degenerate, name="problem-degenerate"),
    path("llms/", views_browse.llm_list, name="llm-list"),
    path("compare/", views_browse.compare, name="compare"),
    path("llms/<int:pk>/", views.llm_detail, name="llm-detail"),
    path(f"static-plotly/plotly-{views.PLOTLY_VERSION}.min.js", views.plotly_js, name="plotly-js"),
    # --- Submitting: upload form, submission page (htmx progress), results CSV, API token (pipeline) ---
    path("submit/", views_submit.submit, name="submit"),
    path("submissions/<int:pk>/", views_submit.submission_detail, name="submission-detail"),
    path("submissions/<int:pk>/results.csv", views_submit.submission_csv, name="submission-csv"),
    path("account/", views_submit.account, name="account"),
    path("accounts/signup/", views_accounts.signup, name="signup"),  # beside Django's /accounts/login/
    path("account/webhook/", views_webhook.account_webhook, name="account-webhook"),
    # --- The public dataset of verdicts (evaluator.dataset) ---
    path("dataset/", views_dataset.dataset, name="dataset"),
    path("dataset/verdicts.jsonl", views_dataset.dataset_jsonl, name="dataset-jsonl"),
    path("dataset/schema.json", views_dataset.dataset_schema, name="dataset-schema"),
    path("dataset/DATASHEET.md", views_dataset.dataset_datasheet, name="dataset-datasheet"),
]
