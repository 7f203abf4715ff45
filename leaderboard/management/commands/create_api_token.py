"""`manage.py create_api_token USERNAME`: make (or replace) a user's API token and print the key, once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard.services.tokens import api_token_create


class Command(BaseCommand):
    help = "Create a user's API token, replacing any earlier one, and print its key (only a hash of it is stored)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        User = get_user_model()
        try:
            user = User.objects.get_by_natural_key(username)
        except User.DoesNotExist as exc:
            raise CommandError(f"No user {username!r}.") from exc
        key = api_token_create(user=user)
        self.stdout.write(f"API token for {username} (shown once, keep it secret): {key}")
