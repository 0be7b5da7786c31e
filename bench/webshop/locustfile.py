"""The web-shop preset's journeys for Locust (FastHttpUser), as bench/webshop runs them.

The same steps as presets/web-shop.yaml: a buyer (weight 3) opens the home
page, logs in (the 303 redirect to the account page is followed, the session
cookie kept in the user's jar), takes the CSRF token from the check-out form,
searches for a term from the same six, adds the first product found to the
cart twice and checks out with the token; a browser (weight 1) follows the
301 of /shop/old and reads the product list. Every check of the preset is
made here; a failed one fails that request and ends the journey, as in
throng. THINK (seconds, from the environment) is the pause after each step.
"""

import os
import random
import re

import gevent
from locust import task
from locust.contrib.fasthttp import FastHttpUser

THINK = float(os.environ.get("THINK", "0"))
TERMS = ["mug", "blue", "lamp", "red", "book", "white"]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# The token's input inside the check-out form (the preset's html extractor
# 'form#checkout input[name=csrf]'; a regular expression, as Locust users write).
CSRF = re.compile(r'<form id="checkout"[^>]*>.*?<input[^>]*name="csrf"[^>]*value="([^"]*)"', re.S)


def think():
    if THINK > 0:
        gevent.sleep(THINK)


class Shop(FastHttpUser):
    def on_start(self):
        self.n = self.environment.runner.user_count if self.environment.runner else 0

    @task(3)
    def buy(self):
        c = self.client
        with c.get("/shop/", name="home", catch_response=True) as r:
            if "Demo shop" not in r.text:
                r.failure("check home-page")
                return
        think()
        with c.post("/shop/login", name="login", data="user=user%d&password=demo" % self.n, headers=FORM, catch_response=True) as r:
            body = r.text
            m = CSRF.search(body or "")
            if "Welcome" not in body or m is None:
                r.failure("check logged-in / extractor csrf")
                return
            csrf = m.group(1)
        think()
        with c.get("/shop/search?q=" + random.choice(TERMS), name="search", catch_response=True) as r:
            try:
                product = r.json()["products"][0]["id"]
            except Exception:
                r.failure("extractor product")
                return
        think()
        for _ in range(2):
            with c.post("/shop/cart", name="add-to-cart", data="id=%s" % product, headers=FORM, catch_response=True) as r:
                try:
                    r.json()["items"]
                except Exception:
                    r.failure("check in-cart")
                    return
            think()
        with c.post("/shop/checkout", name="checkout", data="csrf=" + csrf, headers=FORM, catch_response=True) as r:
            try:
                r.json()["order"]
            except Exception:
                r.failure("check ordered")
                return
        think()

    @task(1)
    def browse(self):
        c = self.client
        c.get("/shop/old", name="browse-home")
        think()
        with c.get("/shop/products", name="products", catch_response=True) as r:
            try:
                if str(r.json()["products"][49]["id"]) != "50":
                    r.failure("check catalogue")
            except Exception:
                r.failure("check catalogue")
        think()
